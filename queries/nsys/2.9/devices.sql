-- relation: devices
-- requires: TARGET_INFO_GPU(id, cuDevice, name, busLocation, l2CacheSize, totalMemory, memoryBandwidth, clockRate, smCount, threadsPerWarp, maxWarpsPerSm, maxThreadsPerBlock, maxBlocksPerSm, maxRegistersPerSm, maxShmemPerSm, maxShmemPerBlock, computeMajor, computeMinor)
-- description: every GPU the capture lists (not only the first row). The activity tables' deviceId is the CUDA device ordinal, TARGET_INFO_GPU.cuDevice, not the row's own id: in the real 2024.5 Perlmutter export the kernels run on deviceId 0, which is cuDevice 0 at bus 0000:03:00.0 (the lowest PCI bus, CUDA's device 0) while id 0 is the GPU at 0000:c1:00.0. Units as exported: memoryBandwidth bytes/s, clockRate Hz.
SELECT
    coalesce(cuDevice, id) AS device,
    name AS name,
    busLocation AS bus_location,
    smCount AS sm_count,
    memoryBandwidth AS memory_bandwidth_bps,
    clockRate AS clock_hz,
    l2CacheSize AS l2_bytes,
    totalMemory AS memory_bytes,
    threadsPerWarp AS threads_per_warp,
    maxWarpsPerSm AS max_warps_per_sm,
    maxThreadsPerBlock AS max_threads_per_block,
    maxBlocksPerSm AS max_blocks_per_sm,
    maxRegistersPerSm AS max_registers_per_sm,
    maxShmemPerSm AS max_shared_per_sm,
    maxShmemPerBlock AS max_shared_per_block,
    computeMajor || '.' || computeMinor AS compute_capability,
    NULL AS simd_per_cu
FROM TARGET_INFO_GPU
