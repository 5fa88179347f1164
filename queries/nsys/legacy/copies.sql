-- relation: copies
-- requires: CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, streamId, globalPid, correlationId, bytes, copyKind, srcKind, dstKind)
-- optional: ENUM_CUDA_MEMCPY_OPER(id, label), ENUM_CUDA_MEM_KIND(id, label), MemcpyOperationStrings(id, name), CUPTI_ACTIVITY_KIND_MEMCPY(srcDeviceId, dstDeviceId)
-- description: memory copies. Copy and memory kinds are resolved by label through the file's own ENUM tables. Files older than schema 3.0 have none: the copy kind then comes from MemcpyOperationStrings (legacy layout) or CUPTI's CUpti_ActivityMemcpyKind labels, the memory kind from the labels Nsight Systems writes (0 Pageable, 1 Pinned, 2 Device, ...; checked on the 2.9 and legacy real exports, where host-to-device copies read Pageable -> Device).
WITH copy_kind(id, label) AS (
{% if has_table('ENUM_CUDA_MEMCPY_OPER') %}
    SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER
{% elif has_table('MemcpyOperationStrings') %}
    SELECT id, name FROM MemcpyOperationStrings
{% else %}
    VALUES (0, 'Unknown'), (1, 'Host-to-Device'), (2, 'Device-to-Host'), (3, 'Host-to-Array'),
           (4, 'Array-to-Host'), (5, 'Array-to-Array'), (6, 'Array-to-Device'), (7, 'Device-to-Array'),
           (8, 'Device-to-Device'), (9, 'Host-to-Host'), (10, 'Peer-to-Peer'),
           (11, 'Unified Host-to-Device'), (12, 'Unified Device-to-Host'), (13, 'Unified Device-to-Device')
{% endif %}
),
mem_kind(id, label) AS (
{% if has_table('ENUM_CUDA_MEM_KIND') %}
    SELECT id, label FROM ENUM_CUDA_MEM_KIND
{% else %}
    VALUES (0, 'Pageable'), (1, 'Pinned'), (2, 'Device'), (3, 'Array'), (4, 'Managed'),
           (5, 'Device Static'), (6, 'Managed Static'), (7, 'Unknown')
{% endif %}
)
SELECT
    (m.globalPid >> 24) & 16777215 AS pid,
    m.deviceId AS device,
    m.streamId AS stream,
    m.start AS start,
    m."end" AS "end",
    m.correlationId AS correlation_id,
    m.bytes AS bytes,
    CASE
        WHEN ck.label LIKE '%Host-to-Device%' OR ck.label LIKE '%HtoD%'
          OR ck.label LIKE '%Host-to-Array%' OR ck.label LIKE '%HtoA%' THEN 'HtoD'
        WHEN ck.label LIKE '%Device-to-Host%' OR ck.label LIKE '%DtoH%'
          OR ck.label LIKE '%Array-to-Host%' OR ck.label LIKE '%AtoH%' THEN 'DtoH'
        WHEN ck.label LIKE '%Peer-to-Peer%' OR ck.label LIKE '%PtoP%' THEN 'PtoP'
        WHEN ck.label LIKE '%Host-to-Host%' OR ck.label LIKE '%HtoH%' THEN 'HtoH'
        WHEN ck.label LIKE '%Device-to-Device%' OR ck.label LIKE '%DtoD%'
          OR ck.label LIKE '%Array%' OR ck.label LIKE '%AtoD%' OR ck.label LIKE '%DtoA%'
          OR ck.label LIKE '%AtoA%' THEN 'DtoD'
        ELSE 'other'
    END AS direction,
    CASE sk.label
        WHEN 'Pageable' THEN 'pageable' WHEN 'Pinned' THEN 'pinned'
        WHEN 'Device' THEN 'device' WHEN 'Device Static' THEN 'device'
        WHEN 'Managed' THEN 'managed' WHEN 'Managed Static' THEN 'managed'
        WHEN 'Array' THEN 'array' ELSE 'unknown'
    END AS src_kind,
    CASE dk.label
        WHEN 'Pageable' THEN 'pageable' WHEN 'Pinned' THEN 'pinned'
        WHEN 'Device' THEN 'device' WHEN 'Device Static' THEN 'device'
        WHEN 'Managed' THEN 'managed' WHEN 'Managed Static' THEN 'managed'
        WHEN 'Array' THEN 'array' ELSE 'unknown'
    END AS dst_kind,
    {% if has_column('CUPTI_ACTIVITY_KIND_MEMCPY', 'srcDeviceId') %}m.srcDeviceId{% else %}NULL{% endif %} AS src_device,
    {% if has_column('CUPTI_ACTIVITY_KIND_MEMCPY', 'dstDeviceId') %}m.dstDeviceId{% else %}NULL{% endif %} AS dst_device
FROM CUPTI_ACTIVITY_KIND_MEMCPY AS m
LEFT JOIN copy_kind AS ck ON ck.id = m.copyKind
LEFT JOIN mem_kind AS sk ON sk.id = m.srcKind
LEFT JOIN mem_kind AS dk ON dk.id = m.dstKind
