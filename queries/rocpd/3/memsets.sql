-- relation: memsets
-- requires: rocpd_kernel_dispatch(id, guid, pid, agent_id, kernel_id, stream_id, queue_id, start, end, event_id), rocpd_info_kernel_symbol(id, guid, display_name), rocpd_info_agent(id, guid, type_index), rocpd_event(id, guid, stack_id)
-- description: hipMemset work as the GPU ran it. rocpd has no memset table: ROCm executes hipMemset as a blit kernel (__amd_rocclr_fillBufferAligned and its siblings), recorded as a dispatch; those dispatches are memsets here and are left out of kernels.sql. The byte count is not recorded with the dispatch, so bytes is NULL (unknown), and so is the memory kind.
SELECT
    k.id AS row_id,
    k.pid AS pid,
    a.type_index AS device,
    coalesce(k.stream_id, k.queue_id) AS stream,
    k.start AS start,
    k."end" AS "end",
    nullif(e.stack_id, 0) AS correlation_id,
    NULL AS bytes,
    'unknown' AS mem_kind
FROM rocpd_kernel_dispatch k
JOIN rocpd_info_agent a ON a.id = k.agent_id AND a.guid = k.guid
JOIN rocpd_info_kernel_symbol s ON s.id = k.kernel_id AND s.guid = k.guid
    AND s.display_name GLOB '__amd_rocclr_fill*'
LEFT JOIN rocpd_event e ON e.id = k.event_id AND e.guid = k.guid
-- LIMIT -1 (no limit) keeps SQLite from pushing pa's domain checks down into the dispatch loop,
-- where they would run on every dispatch before the symbol test keeps the few fill kernels
-- (two thirds of this relation's cost on a capture of 400 k dispatches without any memset).
LIMIT -1
