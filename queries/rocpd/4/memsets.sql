-- relation: memsets
-- requires: rocpd_kernel_dispatch(id, guid, track_id, kernel_id, start_id, end_id, event_id), rocpd_track(id, guid, pid, agent_id, queue_id, stream_id), rocpd_timestamp(id, guid, value), rocpd_info_kernel_symbol(id, guid, display_name), rocpd_info_agent(id, guid, type_index), rocpd_event(id, guid, stack_id)
-- description: hipMemset work as the GPU ran it, in a schema 4.0.0 file: the dispatches of ROCm's fill kernels (__amd_rocclr_fill*), with times through rocpd_timestamp and identity through the track. The byte count is not recorded with the dispatch: bytes and memory kind are unknown.
SELECT
    k.id AS row_id,
    tr.pid AS pid,
    a.type_index AS device,
    coalesce(tr.stream_id, tr.queue_id) AS stream,
    ts.value AS start,
    te.value AS "end",
    nullif(e.stack_id, 0) AS correlation_id,
    NULL AS bytes,
    'unknown' AS mem_kind
FROM rocpd_kernel_dispatch k
JOIN rocpd_info_kernel_symbol s ON s.id = k.kernel_id AND s.guid = k.guid
    AND s.display_name GLOB '__amd_rocclr_fill*'
JOIN rocpd_track tr ON tr.id = k.track_id AND tr.guid = k.guid
JOIN rocpd_info_agent a ON a.id = tr.agent_id AND a.guid = k.guid
LEFT JOIN rocpd_timestamp ts ON ts.id = k.start_id AND ts.guid = k.guid
LEFT JOIN rocpd_timestamp te ON te.id = k.end_id AND te.guid = k.guid
LEFT JOIN rocpd_event e ON e.id = k.event_id AND e.guid = k.guid
-- LIMIT -1 (no limit) keeps SQLite from pushing pa's domain checks down into the dispatch loop,
-- where they would run on every dispatch before the symbol test keeps the few fill kernels
-- (two thirds of this relation's cost on a capture of 400 k dispatches without any memset).
LIMIT -1
