-- relation: syncs
-- requires: CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start, end, deviceId, streamId, globalPid, correlationId, syncType)
-- optional: ENUM_CUPTI_SYNC_TYPE(id, label)
-- description: CUPTI synchronisation records (the CPU's wait as the driver saw it, per device and stream). Type by label through ENUM_CUPTI_SYNC_TYPE; files without ENUM tables use CUpti_ActivitySynchronizationType (0 unknown, 1 event, 2 stream wait, 3 stream, 4 context).
WITH sync_type(id, label) AS (
{% if has_table('ENUM_CUPTI_SYNC_TYPE') %}
    SELECT id, label FROM ENUM_CUPTI_SYNC_TYPE
{% else %}
    VALUES (0, 'Unknown'), (1, 'Event sync'), (2, 'Stream wait sync'), (3, 'Stream sync'), (4, 'Context sync')
{% endif %}
)
SELECT
    y.rowid AS row_id,
    (y.globalPid >> 24) & 16777215 AS pid,
    y.deviceId AS device,
    y.streamId AS stream,
    y.start AS start,
    y."end" AS "end",
    y.correlationId AS correlation_id,
    CASE st.label
        WHEN 'Event sync' THEN 'event' WHEN 'Stream wait sync' THEN 'stream_wait'
        WHEN 'Stream sync' THEN 'stream' WHEN 'Context sync' THEN 'context' ELSE 'unknown'
    END AS sync_type
FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION AS y
LEFT JOIN sync_type AS st ON st.id = y.syncType
