-- relation: kernels
-- requires: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, globalPid, correlationId, demangledName, shortName, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread), StringIds(id, value)
-- description: CUDA kernel executions; names resolved through StringIds by correlated subqueries on its primary key, which SQLite evaluates only when a statement asks for the name (as LEFT JOINs they were two index searches per kernel on every read, ~0.1 s per million kernels: SQLite 3.40 omits an unused LEFT JOIN only from a DISTINCT query). sharedMemoryExecuted (the driver's carve-out) is deliberately not used: static + dynamic is what the kernel asked for.
SELECT
    k.rowid AS row_id,
    (k.globalPid >> 24) & 16777215 AS pid,
    k.deviceId AS device,
    k.streamId AS stream,
    k.start AS start,
    k."end" AS "end",
    k.correlationId AS correlation_id,
    k.demangledName AS name_id,
    (SELECT value FROM StringIds WHERE id = k.demangledName) AS name,
    (SELECT value FROM StringIds WHERE id = k.shortName) AS short_name,
    k.gridX AS grid_x, k.gridY AS grid_y, k.gridZ AS grid_z,
    k.blockX AS block_x, k.blockY AS block_y, k.blockZ AS block_z,
    k.registersPerThread AS registers_per_thread,
    NULL AS sgpr_per_wave,
    k.staticSharedMemory AS static_shared_bytes,
    k.dynamicSharedMemory AS dynamic_shared_bytes,
    k.localMemoryPerThread AS local_bytes_per_thread
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
