-- relation: threads
-- requires: ThreadNames(nameId, globalTid), StringIds(id, value)
-- description: thread names.
SELECT
    (t.globalTid >> 24) & 16777215 AS pid,
    t.globalTid & 16777215 AS tid,
    max(s.value) AS name
FROM ThreadNames AS t
LEFT JOIN StringIds AS s ON s.id = t.nameId
GROUP BY 1, 2
