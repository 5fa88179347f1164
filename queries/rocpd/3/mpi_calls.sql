-- relation: mpi_calls
-- requires: rocpd_region(id, guid, pid, tid, start, end, name_id, event_id), rocpd_event(id, guid, category_id), rocpd_string(id, guid, string), rocpd_arg(guid, event_id, name, value), rocpd_info_thread(id, guid, tid)
-- description: MPI calls recorded by rocprof-sys (category 'mpi', through its PMPI wrappers); rocprofv3 does not intercept MPI. tid is the OS thread id (rocprof-sys stores the rocpd_info_thread key in the region).
-- rank and bytes come from the call's args ('rank', 'bytes') when present, else NULL. Every part is
-- guarded by LIMIT (... EXISTS (SELECT 1 FROM cat) ...), which SQLite evaluates once before its
-- loop: a file without the 'mpi' category (every rocprofv3 file) costs no region or arg scan (an
-- EXISTS in WHERE would be tested inside the loop, for every region). Names that are runtime API names
-- (hip*, __hip*, hsa_*) are never MPI calls and skip the event lookup. The args are aggregated
-- once, only for the events of MPI calls, never with a correlated subquery.
WITH cat AS (
    SELECT DISTINCT guid, id FROM rocpd_string WHERE string = 'mpi'
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
    SELECT r.guid, r.pid, r.tid, r.start, r."end", n.name, n.kind, r.event_id
    FROM rocpd_region r
    CROSS JOIN names n ON n.id = r.name_id AND +n.guid = r.guid
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
    NULL AS row_id,  -- MPI calls are few: read in one piece
    calls.pid AS pid,
    coalesce(t.tid, calls.tid) AS tid,
    args.rank AS rank,
    calls.start AS start,
    calls."end" AS "end",
    calls.name AS name,
    calls.kind AS kind,
    args.bytes AS bytes
FROM calls
LEFT JOIN args ON args.guid = calls.guid AND args.event_id = calls.event_id
LEFT JOIN rocpd_info_thread t ON t.id = calls.tid AND t.guid = calls.guid
