-- relation: memsets
-- requires: CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, streamId, globalPid, correlationId, bytes)
-- optional: CUPTI_ACTIVITY_KIND_MEMSET(memKind), ENUM_CUDA_MEM_KIND(id, label)
-- description: device memsets; memory kind by label through ENUM_CUDA_MEM_KIND, or the labels Nsight Systems writes in files without ENUM tables.
WITH mem_kind(id, label) AS (
{% if has_table('ENUM_CUDA_MEM_KIND') %}
    SELECT id, label FROM ENUM_CUDA_MEM_KIND
{% else %}
    VALUES (0, 'Pageable'), (1, 'Pinned'), (2, 'Device'), (3, 'Array'), (4, 'Managed'),
           (5, 'Device Static'), (6, 'Managed Static'), (7, 'Unknown')
{% endif %}
)
SELECT
    s.rowid AS row_id,
    (s.globalPid >> 24) & 16777215 AS pid,
    s.deviceId AS device,
    s.streamId AS stream,
    s.start AS start,
    s."end" AS "end",
    s.correlationId AS correlation_id,
    s.bytes AS bytes,
    CASE mk.label
        WHEN 'Pageable' THEN 'pageable' WHEN 'Pinned' THEN 'pinned'
        WHEN 'Device' THEN 'device' WHEN 'Device Static' THEN 'device'
        WHEN 'Managed' THEN 'managed' WHEN 'Managed Static' THEN 'managed'
        WHEN 'Array' THEN 'array' ELSE 'unknown'
    END AS mem_kind
FROM CUPTI_ACTIVITY_KIND_MEMSET AS s
LEFT JOIN mem_kind AS mk ON mk.id = {% if has_column('CUPTI_ACTIVITY_KIND_MEMSET', 'memKind') %}s.memKind{% else %}NULL{% endif %}
