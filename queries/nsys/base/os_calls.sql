-- relation: os_calls
-- requires: OSRT_API(start, end, globalTid, nameId), StringIds(id, value)
-- optional: OSRT_API(nestingLevel)
-- description: OS runtime library calls (nsys --trace=osrt): file I/O, locks, sleeps, polls. They count in the span like every other event; the host-activity metrics read them as host work outside the GPU API.
SELECT
    o.rowid AS row_id,
    (o.globalTid >> 24) & 16777215 AS pid,
    o.globalTid & 16777215 AS tid,
    o.start AS start,
    o."end" AS "end",
    s.value AS name,
{% if has_column('OSRT_API', 'nestingLevel') %}
    o.nestingLevel AS depth
{% else %}
    NULL AS depth
{% endif %}
FROM OSRT_API AS o
LEFT JOIN StringIds AS s ON s.id = o.nameId
