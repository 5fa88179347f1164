-- relation: devices
-- requires: rocpd_info_agent(id, guid, type, type_index, name, product_name, extdata), rocpd_kernel_dispatch(guid, agent_id), rocpd_memory_copy(guid, src_agent_id, dst_agent_id)
-- description: the GPU agents this process used (through its dispatches and copies), not every agent of the node
-- rocpd lists every agent of the node in every rank's file, so a GPU is reported only when this
-- file's dispatches or copies ran on it; device = type_index, as in kernels.device. Hardware facts
-- come from the agent's extdata JSON (rocprofv3; rocprof-sys writes '{}', giving NULL). Clock:
-- max_engine_clk_fcompute is in MHz. compute_capability = the agent name, the gfx target.
--
-- Peak memory bandwidth is not stored by rocpd: the column is NULL here, and the summary takes the
-- product's spec-sheet figure from pa/metrics/hardware.yaml (the one table of hardware facts).
WITH used AS (
    SELECT guid, agent_id FROM rocpd_kernel_dispatch
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
    -- one LDS per CU, and a workgroup may use all of it
    CAST(json_extract(a.extdata, '$.lds_size_in_kb') AS INTEGER) * 1024 AS max_shared_per_sm,
    CAST(json_extract(a.extdata, '$.lds_size_in_kb') AS INTEGER) * 1024 AS max_shared_per_block,
    a.name AS compute_capability,
    CAST(json_extract(a.extdata, '$.simd_per_cu') AS INTEGER) AS simd_per_cu
FROM rocpd_info_agent a
-- +a.id: without it SQLite also uses the IN list to look agents up by id, and builds `used` (a
-- union over every dispatch and copy, ~0.2 s at a million rows) twice
WHERE a.type = 'GPU' AND (a.guid, +a.id) IN (SELECT guid, agent_id FROM used)
