-- relation: mpi_calls
-- requires: rocpd_region(id, guid, track_id, name_id, start_id, end_id, event_id), rocpd_event(id, guid, category_id), rocpd_info_category(id, guid, name), rocpd_track(id, guid, pid, tid), rocpd_timestamp(id, guid, value), rocpd_string(id, guid, string), rocpd_arg(guid, event_id, name, value), rocpd_info_thread(id, guid, tid)
-- description: MPI calls of a schema 4.0.0 file (an 'mpi' category in rocpd_info_category; rocprofv3 does not intercept MPI, so its files have none and cost no region scan here). Kinds, rank and bytes as in the schema 3 set; times through rocpd_timestamp, thread through the track.
WITH cat AS (
    SELECT DISTINCT guid, id FROM rocpd_info_category WHERE name = 'mpi'
), names AS (
    SELECT DISTINCT guid, id, string AS name,
    CASE
        WHEN string IN ('MPI_Send', 'MPI_Recv', 'MPI_Isend', 'MPI_Irecv', 'MPI_Sendrecv',
                        'MPI_Sendrecv_replace', 'MPI_Ssend', 'MPI_Issend', 'MPI_Bsend', 'MPI_Ibsend',
                        'MPI_Rsend', 'MPI_Irsend') THEN 'p2p'
        WHEN string GLOB 'MPI_Wait*' OR string GLOB 'MPI_Test*' THEN 'wait'
        WHEN string IN ('MPI_Allreduce', 'MPI_Iallreduce', 'MPI_Reduce', 'MPI_Ireduce', 'MPI_Bcast',
                        'MPI_Ibcast', 'MPI_Barrier', 'MPI_Ibarrier', 'MPI_Scan', 'MPI_Exscan')
          OR string GLOB 'MPI_Allgather*' OR string GLOB 'MPI_Iallgather*'
          OR string GLOB 'MPI_Alltoall*' OR string GLOB 'MPI_Ialltoall*'
          OR string GLOB 'MPI_Gather*' OR string GLOB 'MPI_Igather*'
          OR string GLOB 'MPI_Scatter*' OR string GLOB 'MPI_Iscatter*'
          OR string GLOB 'MPI_Reduce_scatter*' OR string GLOB 'MPI_Ireduce_scatter*' THEN 'collective'
        ELSE 'other'
    END AS kind
    FROM rocpd_string
    WHERE EXISTS (SELECT 1 FROM cat)
      AND NOT (string GLOB 'hip*' OR string GLOB '__hip*' OR string GLOB 'hsa_*')
), calls AS (
    SELECT r.guid, r.track_id, r.start_id, r.end_id, n.name, n.kind, r.event_id
    FROM rocpd_region r
    CROSS JOIN names n ON n.id = r.name_id AND n.guid = r.guid
    CROSS JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
    WHERE (e.category_id, e.guid) IN (SELECT id, guid FROM cat)
    -- LIMIT 0 when the file has no mpi category: SQLite then never enters the region loop (an
    -- EXISTS test in WHERE is checked inside the loop, once per region)
    LIMIT (SELECT CASE WHEN EXISTS (SELECT 1 FROM cat) THEN -1 ELSE 0 END)
), args AS (
    SELECT a.guid, a.event_id,
           max(CASE WHEN a.name = 'rank' THEN CAST(a.value AS INTEGER) END) AS rank,
           max(CASE WHEN a.name = 'bytes' THEN CAST(a.value AS INTEGER) END) AS bytes
    FROM rocpd_arg a
    WHERE a.name IN ('rank', 'bytes') AND (a.guid, a.event_id) IN (SELECT guid, event_id FROM calls)
    GROUP BY a.guid, a.event_id
    LIMIT (SELECT CASE WHEN EXISTS (SELECT 1 FROM cat) THEN -1 ELSE 0 END)
)
SELECT
    NULL AS row_id,
    tr.pid AS pid,
    coalesce(th.tid, tr.tid) AS tid,
    args.rank AS rank,
    ts.value AS start,
    te.value AS "end",
    calls.name AS name,
    calls.kind AS kind,
    args.bytes AS bytes
FROM calls
LEFT JOIN args ON args.guid = calls.guid AND args.event_id = calls.event_id
LEFT JOIN rocpd_track tr ON tr.id = calls.track_id AND tr.guid = calls.guid
LEFT JOIN rocpd_info_thread th ON th.id = tr.tid AND th.guid = tr.guid
LEFT JOIN rocpd_timestamp ts ON ts.id = calls.start_id AND ts.guid = calls.guid
LEFT JOIN rocpd_timestamp te ON te.id = calls.end_id AND te.guid = calls.guid
