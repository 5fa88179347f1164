-- relation: overhead
-- requires: PROFILER_OVERHEAD(start, end, globalTid, nameId), StringIds(id, value)
-- description: time the profiler itself spent on application threads (buffer flushes, instrumentation, injection). Never blamed on the application.
SELECT
    (o.globalTid >> 24) & 16777215 AS pid,
    o.globalTid & 16777215 AS tid,
    o.start AS start,
    o."end" AS "end",
    s.value AS name
FROM PROFILER_OVERHEAD AS o
LEFT JOIN StringIds AS s ON s.id = o.nameId
