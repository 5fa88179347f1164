-- relation: kernels
-- requires: rocpd_kernel_dispatch(id, guid, track_id, kernel_id, start_id, end_id, private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id), rocpd_track(id, guid, pid, agent_id, queue_id, stream_id), rocpd_timestamp(id, guid, value), rocpd_info_kernel_symbol(id, guid, display_name, group_segment_size, sgpr_count, arch_vgpr_count), rocpd_info_agent(id, guid, type_index), rocpd_event(id, guid, stack_id)
-- description: kernel dispatches of a schema 4.0.0 file: times through rocpd_timestamp (start_id, end_id), process, agent and queue through the dispatch's track; otherwise as the schema 3 set (work-item grids divided by the workgroup size, name_id the smallest symbol id with that display name, correlation_id the event's stack_id, ROCm's fill kernels left to memsets).
-- grid_size_* in rocpd_kernel_dispatch count work-items (the file's kernels view shows them as
-- grid_x and the block counts as grid_size_x: only the raw table is read here). A missing timestamp
-- row gives a NULL time, counted as an open record, never a zero.
WITH sym AS (
    SELECT id, guid, display_name, group_segment_size, sgpr_count, arch_vgpr_count,
           min(id) OVER (PARTITION BY guid, display_name) AS name_id,
           -- once per symbol, not per dispatch
           CASE WHEN instr(display_name, '(') > 0
                THEN substr(display_name, 1, instr(display_name, '(') - 1)
                ELSE display_name END AS short_name
    FROM rocpd_info_kernel_symbol
)
SELECT
    k.id AS row_id,
    tr.pid AS pid,
    a.type_index AS device,
    coalesce(tr.stream_id, tr.queue_id) AS stream,
    ts.value AS start,
    te.value AS "end",
    nullif(e.stack_id, 0) AS correlation_id,
    s.name_id AS name_id,
    s.display_name AS name,
    s.short_name AS short_name,
    k.grid_size_x / nullif(k.workgroup_size_x, 0) AS grid_x,
    k.grid_size_y / nullif(k.workgroup_size_y, 0) AS grid_y,
    k.grid_size_z / nullif(k.workgroup_size_z, 0) AS grid_z,
    k.workgroup_size_x AS block_x,
    k.workgroup_size_y AS block_y,
    k.workgroup_size_z AS block_z,
    s.arch_vgpr_count AS registers_per_thread,
    s.sgpr_count AS sgpr_per_wave,
    s.group_segment_size AS static_shared_bytes,
    max(k.group_segment_size - coalesce(s.group_segment_size, 0), 0) AS dynamic_shared_bytes,
    k.private_segment_size AS local_bytes_per_thread,
    NULL AS graph_id
FROM rocpd_kernel_dispatch k
JOIN rocpd_track tr ON tr.id = k.track_id AND tr.guid = k.guid
JOIN rocpd_info_agent a ON a.id = tr.agent_id AND a.guid = k.guid
LEFT JOIN rocpd_timestamp ts ON ts.id = k.start_id AND ts.guid = k.guid
LEFT JOIN rocpd_timestamp te ON te.id = k.end_id AND te.guid = k.guid
LEFT JOIN sym s ON s.id = k.kernel_id AND s.guid = k.guid
LEFT JOIN rocpd_event e ON e.id = k.event_id AND e.guid = k.guid
WHERE coalesce(s.display_name, '') NOT GLOB '__amd_rocclr_fill*'
