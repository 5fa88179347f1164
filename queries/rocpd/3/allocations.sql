-- relation: allocations
-- requires: rocpd_memory_allocate(id, guid, pid, tid, agent_id, type, level, start, end, address, size, event_id), rocpd_event(id, guid, stack_id), rocpd_info_thread(id, guid, tid)
-- optional: rocpd_info_agent(id, guid, type, type_index)
-- description: memory allocation events (rocprofv3 --memory-allocation-trace, --scratch-memory-trace; rocprof-sys's memory allocation domain): ALLOC / FREE / REALLOC / RECLAIM of REAL, VIRTUAL or SCRATCH memory, with the bytes, the device whose memory it is and the API call that made it (the event's stack_id).
-- device = the agent's type_index when the agent is a GPU (as kernels.device), NULL for host memory
-- or when the writer recorded no agent (rocprofv3 records the agent of an ALLOC only). kind and
-- level are rocpd's words in lower case. tid is the OS thread id.
SELECT
    m.id AS row_id,
    m.pid AS pid,
    coalesce(t.tid, m.tid) AS tid,
    CASE WHEN a.type = 'GPU' THEN a.type_index END AS device,
    m.start AS start,
    m."end" AS "end",
    lower(m.type) AS kind,
    lower(m.level) AS level,
    m.size AS bytes,
    m.address AS address,
    nullif(e.stack_id, 0) AS correlation_id
FROM rocpd_memory_allocate m
LEFT JOIN rocpd_info_agent a ON a.id = m.agent_id AND a.guid = m.guid
LEFT JOIN rocpd_event e ON e.id = m.event_id AND e.guid = m.guid
LEFT JOIN rocpd_info_thread t ON t.id = m.tid AND t.guid = m.guid
