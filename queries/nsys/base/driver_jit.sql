-- relation: driver_jit
-- requires: CUPTI_ACTIVITY_KIND_OVERHEAD(start, end, globalTid, overheadType), ENUM_CUPTI_OVERHEAD_TYPE(id, label)
-- description: module loading and JIT compilation the CUDA driver did on the application's behalf, from the CUPTI overhead records labelled "(CUDA)" (Driver JIT compiler, Runtime module loading, Lazy function loading): the application's own cost, unlike the "(Profiler)" overhead. The label names the record; "Command buffer full (CUDA)" is the launch queue, not compilation, and is left out.
SELECT
    (c.globalTid >> 24) & 16777215 AS pid,
    c.globalTid & 16777215 AS tid,
    c.start AS start,
    c."end" AS "end",
    t.label AS name
FROM CUPTI_ACTIVITY_KIND_OVERHEAD AS c
JOIN ENUM_CUPTI_OVERHEAD_TYPE AS t ON t.id = c.overheadType
WHERE t.label LIKE '%(CUDA)%'
  AND (t.label LIKE '%JIT%' OR t.label LIKE '%compil%' OR t.label LIKE '%loading%')
