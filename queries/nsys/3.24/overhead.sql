-- relation: overhead
-- requires: PROFILER_OVERHEAD(start, end, globalTid, nameId), StringIds(id, value)
-- optional: CUPTI_ACTIVITY_KIND_OVERHEAD(start, end, globalTid, nameId, overheadType), ENUM_CUPTI_OVERHEAD_TYPE(id, label)
-- description: profiler overhead from PROFILER_OVERHEAD plus the CUPTI overhead records whose type label says "(Profiler)" (buffer flush, instrumentation, resource creation). CUPTI overhead labelled "(CUDA)" (lazy function loading, JIT compilation, module loading) is the application's own cost and is left out.
SELECT
    (o.globalTid >> 24) & 16777215 AS pid,
    o.globalTid & 16777215 AS tid,
    o.start AS start,
    o."end" AS "end",
    s.value AS name
FROM PROFILER_OVERHEAD AS o
LEFT JOIN StringIds AS s ON s.id = o.nameId
{% if has_table('CUPTI_ACTIVITY_KIND_OVERHEAD') and has_table('ENUM_CUPTI_OVERHEAD_TYPE') %}
UNION ALL
SELECT
    (c.globalTid >> 24) & 16777215 AS pid,
    c.globalTid & 16777215 AS tid,
    c.start AS start,
    c."end" AS "end",
    t.label AS name
FROM CUPTI_ACTIVITY_KIND_OVERHEAD AS c
JOIN ENUM_CUPTI_OVERHEAD_TYPE AS t ON t.id = c.overheadType AND t.label LIKE '%(Profiler)%'
{% endif %}
