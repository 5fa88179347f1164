-- relation: devices
-- requires: TARGET_INFO_CUDA_GPU(deviceId, name, numMultiprocessors, coreClockRate, globalMemorySize, l2CacheSize, numThreadsPerWarp, maxWarpsPerMultiprocessor, maxThreadsPerBlock, maxBlocksPerMultiprocessor, maxRegistersPerMultiprocessor, maxSharedMemoryPerMultiprocessor, maxSharedMemoryPerBlock, computeCapabilityMajor, computeCapabilityMinor)
-- optional: TARGET_INFO_GPU(deviceId, busLocation)
-- description: GPUs of the legacy layout (one row per device and process: grouped by device). Legacy units: coreClockRate in kHz, globalMemorySize in MiB. globalMemoryBandwidth is not used: its value in real legacy exports (4026531840 for a 672 GB/s Quadro RTX 8000) matches no documented unit, so bandwidth is reported as unknown.
SELECT
    g.deviceId AS device,
    max(g.name) AS name,
    {% if has_table('TARGET_INFO_GPU') and has_column('TARGET_INFO_GPU', 'deviceId') %}(SELECT max(t.busLocation) FROM TARGET_INFO_GPU AS t WHERE t.deviceId = g.deviceId){% else %}NULL{% endif %} AS bus_location,
    max(g.numMultiprocessors) AS sm_count,
    NULL AS memory_bandwidth_bps,
    max(g.coreClockRate) * 1000 AS clock_hz,
    max(g.l2CacheSize) AS l2_bytes,
    max(g.globalMemorySize) * 1048576 AS memory_bytes,
    max(g.numThreadsPerWarp) AS threads_per_warp,
    max(g.maxWarpsPerMultiprocessor) AS max_warps_per_sm,
    max(g.maxThreadsPerBlock) AS max_threads_per_block,
    max(g.maxBlocksPerMultiprocessor) AS max_blocks_per_sm,
    max(g.maxRegistersPerMultiprocessor) AS max_registers_per_sm,
    max(g.maxSharedMemoryPerMultiprocessor) AS max_shared_per_sm,
    max(g.maxSharedMemoryPerBlock) AS max_shared_per_block,
    max(g.computeCapabilityMajor) || '.' || max(g.computeCapabilityMinor) AS compute_capability,
    NULL AS simd_per_cu
FROM TARGET_INFO_CUDA_GPU AS g
GROUP BY g.deviceId
