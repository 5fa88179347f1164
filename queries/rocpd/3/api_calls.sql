-- relation: api_calls
-- requires: rocpd_region(id, guid, pid, tid, start, end, name_id, event_id), rocpd_event(id, guid, category_id, stack_id), rocpd_string(id, guid, string), rocpd_info_thread(id, guid, tid)
-- description: HIP, HSA and RCCL runtime calls (rocprofv3 and rocprof-sys category names); markers, MPI and sampling excluded. correlation_id is the event's stack_id (the writer's internal correlation id, shared with the dispatch or copy the call enqueued), never rocpd_event.correlation_id (the external id, 0 unless the application sets one). tid is the OS thread id (rocprof-sys stores the rocpd_info_thread key in the region).
-- Real files hold tens of millions of regions, and metrics filter this relation by kind several
-- times: names and categories are resolved once in small DISTINCT CTEs (DISTINCT keeps SQLite from
-- flattening them back into per-region text comparisons), the region scan is pinned as the outer
-- loop (CROSS JOIN, so no automatic index is ever built over regions), and the event row is only
-- looked up for regions whose name passed. The thread row is a LEFT JOIN on its primary key, which
-- SQLite drops entirely from a query that does not ask for tid.
WITH cat AS (
    SELECT DISTINCT guid, id FROM rocpd_string
    WHERE string IN ('HIP_RUNTIME_API', 'HIP_RUNTIME_API_EXT', 'HIP_COMPILER_API', 'HIP_COMPILER_API_EXT',
                     'HSA_CORE_API', 'HSA_AMD_EXT_API', 'HSA_IMAGE_EXT_API', 'HSA_FINALIZE_EXT_API',
                     'RCCL_API', 'rocm_hip_api', 'rocm_hsa_api', 'rocm_rccl_api')
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
        WHEN string IN ('hipDeviceSynchronize', 'hipStreamSynchronize', 'hipStreamSynchronize_spt',
                          'hipEventSynchronize', 'hipStreamWaitEvent', 'hipStreamWaitEvent_spt')
            THEN 'sync'
        WHEN string GLOB 'hipMalloc*' OR string GLOB 'hipHostMalloc*' OR string GLOB 'hipExtMalloc*'
            THEN 'alloc'
        WHEN string GLOB 'hipFree*' OR string GLOB 'hipHostFree*' THEN 'free'
        -- RCCL's API (ncclAllReduce, ncclSend, ncclGroupStart, ...): collective communication
        WHEN string GLOB 'nccl*' OR string GLOB 'rccl*' THEN 'communication'
        ELSE 'other'
    END AS kind
    FROM rocpd_string
)
SELECT
    r.id AS row_id,
    r.pid AS pid,
    coalesce(t.tid, r.tid) AS tid,
    r.start AS start,
    r."end" AS "end",
    r.name_id AS name_id,
    n.name AS name,
    n.kind AS kind,
    nullif(e.stack_id, 0) AS correlation_id
FROM rocpd_region r
CROSS JOIN names n ON n.id = r.name_id AND n.guid = r.guid
CROSS JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
LEFT JOIN rocpd_info_thread t ON t.id = r.tid AND t.guid = r.guid
WHERE (e.guid, e.category_id) IN (SELECT guid, id FROM cat)
