-- relation: allocations
-- requires: rocpd_memory_allocate(id, guid, track_id, type, level, start_id, end_id, address, size, event_id), rocpd_track(id, guid, pid, tid, agent_id), rocpd_timestamp(id, guid, value), rocpd_event(id, guid, stack_id), rocpd_info_thread(id, guid, tid)
-- optional: rocpd_info_agent(id, guid, type, type_index)
-- description: memory allocation events of a schema 4.0.0 file (ALLOC / FREE / REALLOC / RECLAIM of REAL, VIRTUAL or SCRATCH memory): times through rocpd_timestamp, process, thread and agent through the track; device = the agent's type_index when it is a GPU; correlation_id the event's stack_id.
SELECT
    m.id AS row_id,
    tr.pid AS pid,
    coalesce(th.tid, tr.tid) AS tid,
    CASE WHEN a.type = 'GPU' THEN a.type_index END AS device,
    ts.value AS start,
    te.value AS "end",
    lower(m.type) AS kind,
    lower(m.level) AS level,
    m.size AS bytes,
    m.address AS address,
    nullif(e.stack_id, 0) AS correlation_id
FROM rocpd_memory_allocate m
LEFT JOIN rocpd_track tr ON tr.id = m.track_id AND tr.guid = m.guid
LEFT JOIN rocpd_info_thread th ON th.id = tr.tid AND th.guid = tr.guid
LEFT JOIN rocpd_info_agent a ON a.id = tr.agent_id AND a.guid = m.guid
LEFT JOIN rocpd_timestamp ts ON ts.id = m.start_id AND ts.guid = m.guid
LEFT JOIN rocpd_timestamp te ON te.id = m.end_id AND te.guid = m.guid
LEFT JOIN rocpd_event e ON e.id = m.event_id AND e.guid = m.guid
