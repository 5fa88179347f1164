-- relation: devices
-- requires: rocpd_info_agent(id, guid, type, type_index, name, generic_name, product_name, extdata), rocpd_kernel_dispatch(guid, track_id), rocpd_track(id, guid, agent_id), rocpd_memory_copy(guid, src_agent_id, dst_agent_id)
-- description: the GPU agents this process used (through its dispatches' tracks and its copies) in a schema 4.0.0 file, not every agent of the node. As the schema 3 set, except that the gfx target is `generic_name` (4.0.0's `name` holds the product name on GPUs) and SIMDs per CU may only be given as the agent's total `simd_count`.
-- Clock: max_engine_clk_fcompute is in MHz. Peak memory bandwidth is not stored by rocpd: NULL here,
-- the summary takes the spec sheet's from pa/metrics/hardware.yaml.
WITH used AS (
    SELECT tr.guid, tr.agent_id FROM rocpd_kernel_dispatch k
    JOIN rocpd_track tr ON tr.id = k.track_id AND tr.guid = k.guid
    UNION SELECT guid, src_agent_id FROM rocpd_memory_copy
    UNION SELECT guid, dst_agent_id FROM rocpd_memory_copy
)
SELECT
    a.type_index AS device,
    a.product_name AS name,
    NULL AS bus_location,
    CAST(json_extract(a.extdata, '$.cu_count') AS INTEGER) AS sm_count,
    NULL AS memory_bandwidth_bps,   -- not stored by rocpd: pa takes the spec sheet's (pa/metrics/hardware.yaml)
    CAST(json_extract(a.extdata, '$.max_engine_clk_fcompute') AS INTEGER) * 1000000 AS clock_hz,
    NULL AS l2_bytes,
    NULL AS memory_bytes,
    CAST(json_extract(a.extdata, '$.wave_front_size') AS INTEGER) AS threads_per_warp,
    CAST(json_extract(a.extdata, '$.max_waves_per_cu') AS INTEGER) AS max_warps_per_sm,
    CAST(json_extract(a.extdata, '$.workgroup_max_size') AS INTEGER) AS max_threads_per_block,
    NULL AS max_blocks_per_sm,
    NULL AS max_registers_per_sm,
    CAST(json_extract(a.extdata, '$.lds_size_in_kb') AS INTEGER) * 1024 AS max_shared_per_sm,
    CAST(json_extract(a.extdata, '$.lds_size_in_kb') AS INTEGER) * 1024 AS max_shared_per_block,
    coalesce(a.generic_name, a.name) AS compute_capability,
    coalesce(CAST(json_extract(a.extdata, '$.simd_per_cu') AS INTEGER),
             CAST(json_extract(a.extdata, '$.simd_count') AS INTEGER)
             / nullif(CAST(json_extract(a.extdata, '$.cu_count') AS INTEGER), 0)) AS simd_per_cu
FROM rocpd_info_agent a
-- +a.id: without it SQLite also uses the IN list to look agents up by id, and builds `used` (a
-- union over every dispatch and copy, ~0.2 s at a million rows) twice
WHERE a.type = 'GPU' AND (a.guid, +a.id) IN (SELECT guid, agent_id FROM used)
