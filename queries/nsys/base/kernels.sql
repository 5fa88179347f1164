-- relation: kernels
-- requires: StringIds(id, value)
-- requires_any: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, globalPid, correlationId, demangledName, shortName, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, deviceId, streamId, globalPid, correlationId, graphId)
-- description: CUDA kernel executions; names resolved through StringIds by correlated subqueries on its primary key, which SQLite evaluates only when a statement asks for the name (as LEFT JOINs they were two index searches per kernel on every read, ~0.1 s per million kernels: SQLite 3.40 omits an unused LEFT JOIN only from a DISTINCT query). sharedMemoryExecuted (the driver's carve-out) is deliberately not used: static + dynamic is what the kernel asked for. CUDA graphs traced at graph granularity (nsys --cuda-graph-trace=graph, the default) have one CUPTI_ACTIVITY_KIND_GRAPH_TRACE row per launch and no kernel rows for the nodes: each is read as one kernels row of unknown inner structure, named "CUDA graph <graphId>", name_id -2 - graphId (negative: never a StringIds id), launch configuration NULL, graph_id set; deviceId INT_MAX (the graph started on the host) is read as no device, which the domain drops and counts, as it does start = end = 0 (timing not collected).
-- With graph executions the relation has two driving tables: graph rows first, their row_id the
-- rowid minus 2^62 (negative, increasing), then the kernels with their own rowid, so row ids stay
-- unique and increasing in scan order; SQLite cannot read that union in row_id order without a
-- sort, so such a file's kernels are read in one piece rather than in chunks.
{% if has_table("CUPTI_ACTIVITY_KIND_GRAPH_TRACE") %}
SELECT
    g.rowid - 4611686018427387904 AS row_id,
    (g.globalPid >> 24) & 16777215 AS pid,
    nullif(g.deviceId, 2147483647) AS device,
    g.streamId AS stream,
    g.start AS start,
    g."end" AS "end",
    g.correlationId AS correlation_id,
    -2 - g.graphId AS name_id,
    'CUDA graph ' || g.graphId AS name,
    'CUDA graph ' || g.graphId AS short_name,
    NULL AS grid_x, NULL AS grid_y, NULL AS grid_z,
    NULL AS block_x, NULL AS block_y, NULL AS block_z,
    NULL AS registers_per_thread,
    NULL AS sgpr_per_wave,
    NULL AS static_shared_bytes,
    NULL AS dynamic_shared_bytes,
    NULL AS local_bytes_per_thread,
    g.graphId AS graph_id
FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE AS g
{% if has_table("CUPTI_ACTIVITY_KIND_KERNEL") %}
UNION ALL
{% endif %}
{% endif %}
{% if has_table("CUPTI_ACTIVITY_KIND_KERNEL") %}
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
    k.localMemoryPerThread AS local_bytes_per_thread,
    NULL AS graph_id
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
{% endif %}
