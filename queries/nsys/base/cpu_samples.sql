-- relation: cpu_samples
-- requires: COMPOSITE_EVENTS(id, start, globalTid)
-- optional: SAMPLING_CALLCHAINS(id, symbol, stackDepth), StringIds(id, value)
-- description: CPU sampling events (nsys --sample=process-tree / cpu): one row per sample of a host thread, with the function the sample was taken in (the leaf of its call chain, when the export has call chains). They show what the host was doing during a GPU idle gap.
SELECT
    c.rowid AS row_id,
    (c.globalTid >> 24) & 16777215 AS pid,
    c.globalTid & 16777215 AS tid,
    c.start AS time,
{% if has_table('SAMPLING_CALLCHAINS') and has_table('StringIds') %}
    s.value AS function
FROM COMPOSITE_EVENTS AS c
LEFT JOIN SAMPLING_CALLCHAINS AS cc ON cc.id = c.id AND cc.stackDepth = 0
LEFT JOIN StringIds AS s ON s.id = cc.symbol
{% else %}
    NULL AS function
FROM COMPOSITE_EVENTS AS c
{% endif %}
