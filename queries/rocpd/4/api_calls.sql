-- relation: api_calls
-- requires: rocpd_region(id, guid, track_id, name_id, start_id, end_id, event_id), rocpd_event(id, guid, category_id, stack_id), rocpd_info_category(id, guid, name), rocpd_track(id, guid, pid, tid), rocpd_timestamp(id, guid, value), rocpd_string(id, guid, string), rocpd_info_thread(id, guid, tid)
-- description: HIP, HSA and RCCL runtime calls of a schema 4.0.0 file: categories are rows of rocpd_info_category (lower-case, repeated: hsa_api twice), times through rocpd_timestamp, process and thread through the region's track. Kinds by name as in the schema 3 set; correlation_id the event's stack_id (correlation_id is 0 on every event).
WITH cat AS (
    SELECT DISTINCT guid, id FROM rocpd_info_category WHERE name IN ('hip_api', 'hsa_api', 'rccl_api')
), names AS (
    SELECT DISTINCT guid, id, string AS name,
    CASE
        WHEN string IN ('hipLaunchKernel', 'hipLaunchKernel_spt', 'hipExtLaunchKernel',
                          'hipModuleLaunchKernel', 'hipExtModuleLaunchKernel', 'hipHccModuleLaunchKernel',
                          'hipLaunchCooperativeKernel', 'hipLaunchCooperativeKernel_spt',
                          'hipModuleLaunchCooperativeKernel', 'hipLaunchKernelExC', 'hipDrvLaunchKernelEx')
            THEN 'launch'
        WHEN string GLOB 'hipGraphLaunch*' THEN 'graph_launch'
        WHEN string GLOB 'hipMemcpy*Async*' THEN 'memcpy_async'
        WHEN string GLOB 'hipMemcpy*' THEN 'memcpy'
        WHEN string GLOB 'hipMemset*' THEN 'memset'
        -- hipStreamWaitEvent makes a stream wait on the device; the host does not block: 'other'
        WHEN string IN ('hipDeviceSynchronize', 'hipStreamSynchronize', 'hipStreamSynchronize_spt',
                          'hipEventSynchronize')
            THEN 'sync'
        WHEN string GLOB 'hipMalloc*' OR string GLOB 'hipHostMalloc*' OR string GLOB 'hipExtMalloc*'
            THEN 'alloc'
        WHEN string GLOB 'hipFree*' OR string GLOB 'hipHostFree*' THEN 'free'
        -- loading a code object, and JIT-linking one
        WHEN string GLOB 'hipModuleLoad*' OR string GLOB 'hipLibraryLoad*' OR string GLOB 'hipLinkAdd*'
          OR string GLOB 'hipLinkComplete*'
            THEN 'module'
        WHEN string GLOB 'nccl*' OR string GLOB 'rccl*' THEN 'communication'
        ELSE 'other'
    END AS kind
    FROM rocpd_string
)
SELECT
    r.id AS row_id,
    tr.pid AS pid,
    coalesce(th.tid, tr.tid) AS tid,
    ts.value AS start,
    te.value AS "end",
    r.name_id AS name_id,
    n.name AS name,
    n.kind AS kind,
    nullif(e.stack_id, 0) AS correlation_id
FROM rocpd_region r
CROSS JOIN names n ON n.id = r.name_id AND n.guid = r.guid
CROSS JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
LEFT JOIN rocpd_track tr ON tr.id = r.track_id AND tr.guid = r.guid
LEFT JOIN rocpd_info_thread th ON th.id = tr.tid AND th.guid = tr.guid
LEFT JOIN rocpd_timestamp ts ON ts.id = r.start_id AND ts.guid = r.guid
LEFT JOIN rocpd_timestamp te ON te.id = r.end_id AND te.guid = r.guid
WHERE (e.category_id, e.guid) IN (SELECT id, guid FROM cat)
