-- relation: mpi_calls
-- requires: StringIds(id, value)
-- requires_any: MPI_P2P_EVENTS, MPI_COLLECTIVES_EVENTS, MPI_START_WAIT_EVENTS, MPI_OTHER_EVENTS
-- optional: MPI_P2P_EVENTS(start, end, globalTid, textId, size), MPI_COLLECTIVES_EVENTS(start, end, globalTid, textId, size), MPI_START_WAIT_EVENTS(start, end, globalTid, textId), MPI_OTHER_EVENTS(start, end, globalTid, textId), MPI_RANKS(globalTid, rank)
-- description: MPI calls traced by Nsight Systems (--trace=mpi), one table per kind; the rank comes from MPI_RANKS when present. A file with none of the MPI tables (MPI not traced) has no mpi_calls relation: skipped, never "zero MPI time".
{% set parts = [] %}
{% if has_table('MPI_P2P_EVENTS') %}{% set _ = parts.append(("MPI_P2P_EVENTS", "p2p", has_column('MPI_P2P_EVENTS', 'size'))) %}{% endif %}
{% if has_table('MPI_COLLECTIVES_EVENTS') %}{% set _ = parts.append(("MPI_COLLECTIVES_EVENTS", "collective", has_column('MPI_COLLECTIVES_EVENTS', 'size'))) %}{% endif %}
{% if has_table('MPI_START_WAIT_EVENTS') %}{% set _ = parts.append(("MPI_START_WAIT_EVENTS", "wait", False)) %}{% endif %}
{% if has_table('MPI_OTHER_EVENTS') %}{% set _ = parts.append(("MPI_OTHER_EVENTS", "other", False)) %}{% endif %}
WITH calls AS (
{% for table, kind, has_size in parts %}
    SELECT start, "end", globalTid, textId, '{{ kind }}' AS kind, {% if has_size %}size{% else %}NULL{% endif %} AS bytes
    FROM {{ table }}
    {% if not loop.last %}UNION ALL{% endif %}
{% endfor %}
),
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
    s.value AS name,
    c.kind AS kind,
    c.bytes AS bytes
FROM calls AS c
LEFT JOIN StringIds AS s ON s.id = c.textId
LEFT JOIN ranks AS r ON r.pid = (c.globalTid >> 24) & 16777215
