-- relation: copies
-- requires: rocpd_memory_copy(id, guid, pid, start, end, name_id, dst_agent_id, src_agent_id, size, queue_id, stream_id, event_id), rocpd_string(id, guid, string), rocpd_info_agent(id, guid, type, type_index), rocpd_event(id, guid, stack_id)
-- description: memory copies. A copy between two different GPU agents is a peer copy (PtoP) whatever its name: rocprofiler-sdk has no peer-to-peer copy operation and names it MEMORY_COPY_DEVICE_TO_DEVICE (two GCDs of one MI250X package are two agents). Otherwise the direction is the copy's name, else the src/dst agent types. correlation_id is the event's stack_id (shared with the API call that enqueued the copy).
-- Host-side memory kind (pageable vs pinned) is not recorded by rocpd: it is 'unknown'; GPU-side
-- memory is 'device'. device = the GPU agent involved (dst for HtoD, src otherwise). Agent ids are
-- compared as ids (rocprofv3 numbers agents by HSA node, from 0; rocprof-sys from 1).
-- A writer bug (rocprof-sys, July 2025) records a copy's source and destination as the same agent
-- (the CPU for device-to-host copies, the GPU for host-to-device ones): the copy's name then decides
-- the direction and the memory kinds, and a named direction with no GPU agent on either side takes
-- the file's GPU when it has exactly one (lone_gpu) instead of being dropped for a missing device.
WITH lone_gpu AS (
    SELECT guid, min(type_index) AS device FROM rocpd_info_agent WHERE type = 'GPU'
    GROUP BY guid HAVING count(*) = 1
), c AS (
    SELECT m.id AS row_id, m.pid, m.start, m."end", m.size, coalesce(m.stream_id, m.queue_id) AS stream,
           nullif(e.stack_id, 0) AS correlation_id,
           lg.device AS lone_device,
           sa.type AS src_type, da.type AS dst_type, m.src_agent_id, m.dst_agent_id,
           CASE WHEN sa.type = 'GPU' THEN sa.type_index END AS src_device,
           CASE WHEN da.type = 'GPU' THEN da.type_index END AS dst_device,
           CASE n.string
               WHEN 'MEMORY_COPY_HOST_TO_DEVICE' THEN 'HtoD'
               WHEN 'MEMORY_COPY_DEVICE_TO_HOST' THEN 'DtoH'
               WHEN 'MEMORY_COPY_DEVICE_TO_DEVICE' THEN 'DtoD'
               WHEN 'MEMORY_COPY_PEER_TO_PEER' THEN 'PtoP'
               WHEN 'MEMORY_COPY_HOST_TO_HOST' THEN 'HtoH'
           END AS named_direction
    FROM rocpd_memory_copy m
    LEFT JOIN rocpd_string n ON n.id = m.name_id AND n.guid = m.guid
    LEFT JOIN rocpd_info_agent sa ON sa.id = m.src_agent_id AND sa.guid = m.guid
    LEFT JOIN rocpd_info_agent da ON da.id = m.dst_agent_id AND da.guid = m.guid
    LEFT JOIN rocpd_event e ON e.id = m.event_id AND e.guid = m.guid
    LEFT JOIN lone_gpu lg ON lg.guid = m.guid
), d AS (
    SELECT *,
           CASE
               -- two different GPU agents: a peer copy, even when named DEVICE_TO_DEVICE
               WHEN src_type = 'GPU' AND dst_type = 'GPU' AND src_agent_id <> dst_agent_id THEN 'PtoP'
               WHEN named_direction IS NOT NULL THEN named_direction
               WHEN src_type = 'CPU' AND dst_type = 'GPU' THEN 'HtoD'
               WHEN src_type = 'GPU' AND dst_type = 'CPU' THEN 'DtoH'
               WHEN src_type = 'GPU' AND dst_type = 'GPU' THEN 'DtoD'
               WHEN src_type = 'CPU' AND dst_type = 'CPU' THEN 'HtoH'
               ELSE 'other'
           END AS direction
    FROM c
)
SELECT
    row_id,
    pid,
    coalesce(CASE WHEN direction = 'HtoD' THEN dst_device ELSE coalesce(src_device, dst_device) END,
             CASE WHEN direction IN ('HtoD', 'DtoH', 'DtoD') THEN lone_device END) AS device,
    stream,
    start,
    "end",
    correlation_id,
    size AS bytes,
    direction,
    CASE WHEN direction IN ('DtoH', 'DtoD', 'PtoP') THEN 'device'
         WHEN direction IN ('HtoD', 'HtoH') THEN 'unknown'
         WHEN src_type = 'GPU' THEN 'device' ELSE 'unknown' END AS src_kind,
    CASE WHEN direction IN ('HtoD', 'DtoD', 'PtoP') THEN 'device'
         WHEN direction IN ('DtoH', 'HtoH') THEN 'unknown'
         WHEN dst_type = 'GPU' THEN 'device' ELSE 'unknown' END AS dst_kind,
    src_device,
    dst_device,
    NULL AS migration  -- rocpd records no unified-memory migrations as copies
FROM d
