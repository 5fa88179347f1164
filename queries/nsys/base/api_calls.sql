-- relation: api_calls
-- requires: CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId), StringIds(id, value)
-- description: CUDA runtime and driver API calls. The kind is read from the function name, covering every spelling across CUDA versions (cudaLaunchKernel_v7000, cudaLaunchKernelExC, cuLaunchKernel, cuLaunchKernelEx, cudaLaunchCooperativeKernel, graph launches). cudaStreamWaitEvent is not a CPU-blocking sync and stays "other". Module loading and JIT linking (cuModuleLoad*, cuLibraryLoad*, cudaLibraryLoad*, cuLink*, nvrtcCompileProgram) are "module".
-- Names are classified once per string, not once per call: DISTINCT keeps SQLite from flattening
-- this CTE back into two dozen LIKE tests on every row. Every CUDA runtime and driver function
-- name starts with "cu", so only those strings are classified (the CTE is built again for each
-- chunk of a chunked read, so it must not scan the calls themselves). The name is a correlated
-- subquery on StringIds' primary key, evaluated only for statements that ask for it (a LEFT JOIN
-- was searched for every call by every read).
WITH kinds AS (
    SELECT DISTINCT s.id AS id,
    CASE
        WHEN s.value LIKE 'cudaGraphLaunch%' OR s.value LIKE 'cuGraphLaunch%' THEN 'graph_launch'
        WHEN s.value LIKE 'cudaLaunchKernel%' OR s.value LIKE 'cudaLaunchCooperativeKernel%'
          OR s.value LIKE 'cudaLaunch\_v%' ESCAPE '\' OR s.value = 'cudaLaunch'
          OR s.value LIKE 'cuLaunchKernel%' OR s.value LIKE 'cuLaunchCooperativeKernel%'
          OR s.value LIKE 'cuLaunchGrid%' OR s.value LIKE 'cudaLaunchDevice%' THEN 'launch'
        WHEN s.value LIKE 'cudaMemcpy%Async%' OR s.value LIKE 'cuMemcpy%Async%' THEN 'memcpy_async'
        WHEN s.value LIKE 'cudaMemcpy%' OR s.value LIKE 'cuMemcpy%' THEN 'memcpy'
        WHEN s.value LIKE 'cudaMemset%' OR s.value LIKE 'cuMemset%' THEN 'memset'
        WHEN s.value LIKE 'cudaDeviceSynchronize%' OR s.value LIKE 'cudaThreadSynchronize%'
          OR s.value LIKE 'cudaStreamSynchronize%' OR s.value LIKE 'cudaEventSynchronize%'
          OR s.value LIKE 'cuCtxSynchronize%' OR s.value LIKE 'cuStreamSynchronize%'
          OR s.value LIKE 'cuEventSynchronize%' THEN 'sync'
        WHEN s.value LIKE 'cudaMalloc%' OR s.value LIKE 'cudaHostAlloc%' OR s.value LIKE 'cuMemAlloc%'
          OR s.value LIKE 'cuMemHostAlloc%' THEN 'alloc'
        WHEN s.value LIKE 'cudaFree%' OR s.value LIKE 'cuMemFree%' THEN 'free'
        WHEN s.value LIKE 'cuModuleLoad%' OR s.value LIKE 'cuLibraryLoad%' OR s.value LIKE 'cudaLibraryLoad%'
          OR s.value LIKE 'cuLinkComplete%' OR s.value LIKE 'cuLinkAdd%' OR s.value LIKE 'nvrtcCompileProgram%'
          THEN 'module'
        ELSE 'other'
    END AS kind
    FROM StringIds AS s
    WHERE s.value LIKE 'cu%' OR s.value LIKE 'nvrtc%'
)
SELECT
    r.rowid AS row_id,
    (r.globalTid >> 24) & 16777215 AS pid,
    r.globalTid & 16777215 AS tid,
    r.start AS start,
    r."end" AS "end",
    r.nameId AS name_id,
    (SELECT value FROM StringIds WHERE id = r.nameId) AS name,
    coalesce(k.kind, 'other') AS kind,
    r.correlationId AS correlation_id
FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
LEFT JOIN kinds AS k ON k.id = r.nameId
