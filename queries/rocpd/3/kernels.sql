-- relation: kernels
-- requires: rocpd_kernel_dispatch(id, guid, pid, agent_id, kernel_id, queue_id, stream_id, start, end, private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id), rocpd_info_kernel_symbol(id, guid, display_name, group_segment_size, sgpr_count, arch_vgpr_count), rocpd_info_agent(id, guid, type_index), rocpd_event(id, guid, stack_id)
-- description: kernel dispatches with their symbol; HIP work-item grids divided by the workgroup size. ROCm's fill kernels (__amd_rocclr_fill*, how hipMemset runs) are memsets and left to memsets.sql.
-- device = the agent's type_index (GPU number among GPU agents, the HIP device number).
-- graph_id is NULL: a HIP graph's kernels are recorded as dispatches like any other, correlated to the
-- hipGraphLaunch call that launched them.
-- correlation_id = the event's stack_id: the internal correlation id the writer shares between the
-- launch call's event and the dispatch's (rocpd_event.correlation_id is the external id, 0 unless
-- the application sets one).
-- name_id = the smallest symbol id carrying the same display name: the loader registers one symbol
-- per kernel per agent's code object, so symbol ids alone would split one kernel into several.
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
    k.pid AS pid,
    a.type_index AS device,
    coalesce(k.stream_id, k.queue_id) AS stream,
    k.start AS start,
    k."end" AS "end",
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
    -- the dispatch's LDS is static + dynamic; never report a negative dynamic part
    max(k.group_segment_size - coalesce(s.group_segment_size, 0), 0) AS dynamic_shared_bytes,
    k.private_segment_size AS local_bytes_per_thread,
    NULL AS graph_id
FROM rocpd_kernel_dispatch k
JOIN rocpd_info_agent a ON a.id = k.agent_id AND a.guid = k.guid
LEFT JOIN sym s ON s.id = k.kernel_id AND s.guid = k.guid
LEFT JOIN rocpd_event e ON e.id = k.event_id AND e.guid = k.guid
WHERE coalesce(s.display_name, '') NOT GLOB '__amd_rocclr_fill*'
