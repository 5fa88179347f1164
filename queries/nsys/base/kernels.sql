-- relation: kernels
-- requires: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, globalPid, correlationId, demangledName, shortName, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread), StringIds(id, value)
-- description: CUDA kernel executions; names resolved through StringIds. sharedMemoryExecuted (the driver's carve-out) is deliberately not used: static + dynamic is what the kernel asked for.
SELECT
    k.rowid AS row_id,
    (k.globalPid >> 24) & 16777215 AS pid,
    k.deviceId AS device,
    k.streamId AS stream,
    k.start AS start,
    k."end" AS "end",
    k.correlationId AS correlation_id,
    k.demangledName AS name_id,
    dn.value AS name,
    sn.value AS short_name,
    k.gridX AS grid_x, k.gridY AS grid_y, k.gridZ AS grid_z,
    k.blockX AS block_x, k.blockY AS block_y, k.blockZ AS block_z,
    k.registersPerThread AS registers_per_thread,
    NULL AS sgpr_per_wave,
    k.staticSharedMemory AS static_shared_bytes,
    k.dynamicSharedMemory AS dynamic_shared_bytes,
    k.localMemoryPerThread AS local_bytes_per_thread
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
LEFT JOIN StringIds AS dn ON dn.id = k.demangledName
LEFT JOIN StringIds AS sn ON sn.id = k.shortName
