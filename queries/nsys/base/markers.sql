-- relation: markers
-- requires: NVTX_EVENTS(start, end, eventType, globalTid, text, textId, domainId), StringIds(id, value)
-- optional: ENUM_NSYS_EVENT_TYPE(id, name)
-- description: NVTX push/pop and start/end ranges (both matter); text inline or registered (textId -> StringIds); domain names from the NvtxDomainCreate rows of the same process. Event types by name through ENUM_NSYS_EVENT_TYPE; files without it use the values Nsight Systems has always written (59 push/pop, 60 start/end, 75 domain create). Ranges still open at the end of capture keep end NULL and are counted by the engine, never summed. In files with no MPI tables, ranges named MPI_* in the NVTX domain "MPI" are the older Nsight Systems' MPI trace: they are MPI calls (mpi_calls), not markers.
WITH event_type(id, name) AS (
{% if has_table('ENUM_NSYS_EVENT_TYPE') %}
    SELECT id, name FROM ENUM_NSYS_EVENT_TYPE
    WHERE name IN ('NvtxPushPopRange', 'NvtxStartEndRange', 'NvtxDomainCreate')
{% else %}
    VALUES (59, 'NvtxPushPopRange'), (60, 'NvtxStartEndRange'), (75, 'NvtxDomainCreate')
{% endif %}
),
domains AS (
    SELECT (d.globalTid >> 24) & 16777215 AS pid, d.domainId AS domain_id,
           max(coalesce(d.text, ds.value)) AS name
    FROM NVTX_EVENTS AS d
    JOIN event_type AS et ON et.id = d.eventType AND et.name = 'NvtxDomainCreate'
    LEFT JOIN StringIds AS ds ON ds.id = d.textId
    GROUP BY 1, 2
)
SELECT
    e.rowid AS row_id,
    (e.globalTid >> 24) & 16777215 AS pid,
    e.globalTid & 16777215 AS tid,
    e.start AS start,
    e."end" AS "end",
    coalesce(e.text, s.value) AS name,
    dm.name AS domain,
    CASE et.name WHEN 'NvtxPushPopRange' THEN 'push_pop' ELSE 'start_end' END AS kind
FROM NVTX_EVENTS AS e
JOIN event_type AS et ON et.id = e.eventType AND et.name IN ('NvtxPushPopRange', 'NvtxStartEndRange')
LEFT JOIN StringIds AS s ON s.id = e.textId
LEFT JOIN domains AS dm ON dm.pid = (e.globalTid >> 24) & 16777215 AND dm.domain_id = e.domainId
{% if not (has_table('MPI_P2P_EVENTS') or has_table('MPI_COLLECTIVES_EVENTS') or has_table('MPI_START_WAIT_EVENTS')
           or has_table('MPI_OTHER_EVENTS')) %}
WHERE NOT (dm.name IS 'MPI' AND coalesce(e.text, s.value, '') GLOB 'MPI_*')
{% endif %}
