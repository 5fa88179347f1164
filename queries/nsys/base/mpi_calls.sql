-- relation: mpi_calls
-- requires: StringIds(id, value)
-- requires_any: MPI_P2P_EVENTS, MPI_COLLECTIVES_EVENTS, MPI_START_WAIT_EVENTS, MPI_OTHER_EVENTS, NVTX_EVENTS
-- optional: MPI_P2P_EVENTS(start, end, globalTid, textId, size), MPI_COLLECTIVES_EVENTS(start, end, globalTid, textId, size), MPI_START_WAIT_EVENTS(start, end, globalTid, textId), MPI_OTHER_EVENTS(start, end, globalTid, textId), MPI_RANKS(globalTid, rank), NVTX_EVENTS(start, end, eventType, globalTid, text, textId, domainId), ENUM_NSYS_EVENT_TYPE(id, name)
-- description: MPI calls traced by Nsight Systems (--trace=mpi), one table per kind; the rank comes from MPI_RANKS when present. Older versions wrote no MPI tables: their MPI trace is NVTX ranges named MPI_* in an NVTX domain named "MPI", read here when none of the MPI tables exists (kind from the name: collectives, waits and tests, point-to-point, other; no bytes, no rank). The same ranges are then left out of the markers relation. A file with neither has no MPI calls: MPI is reported as not captured (when_empty), never "zero MPI time".
-- when_empty: MPI not traced: no MPI tables and no NVTX ranges named MPI_* in an "MPI" domain (nsys profile --trace=mpi)
{% set parts = [] %}
{% if has_table('MPI_P2P_EVENTS') %}{% set _ = parts.append(("MPI_P2P_EVENTS", "p2p", has_column('MPI_P2P_EVENTS', 'size'))) %}{% endif %}
{% if has_table('MPI_COLLECTIVES_EVENTS') %}{% set _ = parts.append(("MPI_COLLECTIVES_EVENTS", "collective", has_column('MPI_COLLECTIVES_EVENTS', 'size'))) %}{% endif %}
{% if has_table('MPI_START_WAIT_EVENTS') %}{% set _ = parts.append(("MPI_START_WAIT_EVENTS", "wait", False)) %}{% endif %}
{% if has_table('MPI_OTHER_EVENTS') %}{% set _ = parts.append(("MPI_OTHER_EVENTS", "other", False)) %}{% endif %}
{% set from_nvtx = not parts %}
WITH
{% if from_nvtx %}
event_type(id, name) AS (
{% if has_table('ENUM_NSYS_EVENT_TYPE') %}
    SELECT id, name FROM ENUM_NSYS_EVENT_TYPE
    WHERE name IN ('NvtxPushPopRange', 'NvtxStartEndRange', 'NvtxDomainCreate')
{% else %}
    VALUES (59, 'NvtxPushPopRange'), (60, 'NvtxStartEndRange'), (75, 'NvtxDomainCreate')
{% endif %}
),
mpi_domains AS (
    SELECT (d.globalTid >> 24) & 16777215 AS pid, d.domainId AS domain_id
    FROM NVTX_EVENTS AS d
    JOIN event_type AS et ON et.id = d.eventType AND et.name = 'NvtxDomainCreate'
    LEFT JOIN StringIds AS ds ON ds.id = d.textId
    WHERE coalesce(d.text, ds.value) = 'MPI'
),
ranges AS (
    SELECT e.start, e."end", e.globalTid, coalesce(e.text, s.value) AS name
    FROM NVTX_EVENTS AS e
    JOIN event_type AS et ON et.id = e.eventType AND et.name IN ('NvtxPushPopRange', 'NvtxStartEndRange')
    JOIN mpi_domains AS dm ON dm.pid = (e.globalTid >> 24) & 16777215 AND dm.domain_id = e.domainId
    LEFT JOIN StringIds AS s ON s.id = e.textId
    -- a constant test, made once before the scan: without an MPI domain no NVTX range is read
    -- (SQLite would otherwise build two automatic indexes over NVTX_EVENTS to find none)
    WHERE coalesce(e.text, s.value) GLOB 'MPI_*' AND EXISTS (SELECT 1 FROM mpi_domains)
),
calls AS (
    SELECT start, "end", globalTid, NULL AS textId, name,
        CASE
            WHEN name GLOB 'MPI_I[a-z]*' AND substr(name, 6) IN (
                'allreduce', 'reduce', 'bcast', 'barrier', 'allgather', 'allgatherv', 'alltoall',
                'alltoallv', 'alltoallw', 'gather', 'gatherv', 'scatter', 'scatterv', 'reduce_scatter',
                'reduce_scatter_block', 'scan', 'exscan') THEN 'collective'
            WHEN name IN ('MPI_Allreduce', 'MPI_Reduce', 'MPI_Bcast', 'MPI_Barrier', 'MPI_Allgather',
                          'MPI_Allgatherv', 'MPI_Alltoall', 'MPI_Alltoallv', 'MPI_Alltoallw', 'MPI_Gather',
                          'MPI_Gatherv', 'MPI_Scatter', 'MPI_Scatterv', 'MPI_Reduce_scatter',
                          'MPI_Reduce_scatter_block', 'MPI_Scan', 'MPI_Exscan') THEN 'collective'
            WHEN name GLOB 'MPI_Wait*' OR name GLOB 'MPI_Test*' THEN 'wait'
            WHEN name GLOB 'MPI_*send*' OR name GLOB 'MPI_*recv*' OR name GLOB 'MPI_*Send*'
              OR name GLOB 'MPI_*Recv*' OR name IN ('MPI_Put', 'MPI_Get', 'MPI_Accumulate') THEN 'p2p'
            ELSE 'other'
        END AS kind,
        NULL AS bytes
    FROM ranges
),
{% else %}
calls AS (
{% for table, kind, has_size in parts %}
    SELECT start, "end", globalTid, textId, NULL AS name, '{{ kind }}' AS kind,
           {% if has_size %}size{% else %}NULL{% endif %} AS bytes
    FROM {{ table }}
    {% if not loop.last %}UNION ALL{% endif %}
{% endfor %}
),
{% endif %}
ranks AS (
{% if has_table('MPI_RANKS') %}
    SELECT (globalTid >> 24) & 16777215 AS pid, min(rank) AS rank FROM MPI_RANKS GROUP BY 1
{% else %}
    SELECT NULL AS pid, NULL AS rank WHERE 0
{% endif %}
)
SELECT
    NULL AS row_id,  -- a UNION of several tables: read in one piece
    (c.globalTid >> 24) & 16777215 AS pid,
    c.globalTid & 16777215 AS tid,
    r.rank AS rank,
    c.start AS start,
    c."end" AS "end",
    coalesce(c.name, s.value) AS name,
    c.kind AS kind,
    c.bytes AS bytes
FROM calls AS c
LEFT JOIN StringIds AS s ON s.id = c.textId
LEFT JOIN ranks AS r ON r.pid = (c.globalTid >> 24) & 16777215
