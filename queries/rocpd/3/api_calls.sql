-- relation: api_calls
-- requires: rocpd_region(id, guid, pid, tid, start, end, name_id, event_id), rocpd_event(id, guid, category_id, stack_id), rocpd_string(id, guid, string), rocpd_info_thread(id, guid, tid)
-- description: HIP, HSA and RCCL runtime calls (rocprofv3 and rocprof-sys category names); markers, MPI and sampling excluded. correlation_id is the event's stack_id (the writer's internal correlation id, shared with the dispatch or copy the call enqueued), never rocpd_event.correlation_id (the external id, 0 unless the application sets one). tid is the OS thread id (rocprof-sys stores the rocpd_info_thread key in the region).
-- Real files hold tens of millions of regions, nearly all of kind 'other' (HSA calls), and pa reads
-- this relation in one pass that needs every row's category (for the extent of the 'other' calls)
-- but the kind and name of few. So: categories are resolved once in a small DISTINCT CTE (DISTINCT
-- keeps SQLite from flattening it back into per-region text comparisons) and tested as integer
-- ids; the region scan is pinned as the outer loop (CROSS JOIN: no automatic index over regions);
-- the kind comes from a CTE holding only the few dozen names whose kind is not 'other' (a lookup
-- in a tree of a few dozen entries per region instead of one over every interned string, which
-- cost as much again as the whole event join); the name is read from rocpd_string by its primary
-- key only when a query asks for it (pa reads names through api_names), and so is the thread row
-- for tid. Both small lookups match on guid with a unary +, which keeps the text out of the
-- lookup key (the guid is still compared, on the few rows whose id matched): with the guid in the
-- key, each of millions of lookups compared it at every level of the tree.
WITH cat AS (
    SELECT DISTINCT guid, id FROM rocpd_string
    WHERE string IN ('HIP_RUNTIME_API', 'HIP_RUNTIME_API_EXT', 'HIP_COMPILER_API', 'HIP_COMPILER_API_EXT',
                     'HSA_CORE_API', 'HSA_AMD_EXT_API', 'HSA_IMAGE_EXT_API', 'HSA_FINALIZE_EXT_API',
                     'RCCL_API', 'rocm_hip_api', 'rocm_hsa_api', 'rocm_rccl_api')
), classified AS (
    SELECT guid, id,
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
        -- RCCL's API (ncclAllReduce, ncclSend, ncclGroupStart, ...): collective communication
        WHEN string GLOB 'nccl*' OR string GLOB 'rccl*' THEN 'communication'
        ELSE 'other'
    END AS kind
    FROM rocpd_string
    WHERE string GLOB 'hip*' OR string GLOB 'nccl*' OR string GLOB 'rccl*'
), kinds AS (
    SELECT DISTINCT guid, id, kind FROM classified WHERE kind <> 'other'
)
SELECT
    r.id AS row_id,
    r.pid AS pid,
    coalesce((SELECT t.tid FROM rocpd_info_thread t WHERE t.id = r.tid AND +t.guid = r.guid), r.tid) AS tid,
    r.start AS start,
    r."end" AS "end",
    r.name_id AS name_id,
    (SELECT s.string FROM rocpd_string s WHERE s.id = r.name_id AND s.guid = r.guid) AS name,
    coalesce(k.kind, 'other') AS kind,
    nullif(e.stack_id, 0) AS correlation_id
FROM rocpd_region r
CROSS JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
LEFT JOIN kinds k ON k.id = r.name_id AND +k.guid = r.guid
WHERE (e.category_id, e.guid) IN (SELECT id, guid FROM cat)
