-- relation: copies
-- requires: CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, streamId, globalPid, correlationId, bytes, copyKind, srcKind, dstKind)
-- optional: ENUM_CUDA_MEMCPY_OPER(id, label), ENUM_CUDA_MEM_KIND(id, label), MemcpyOperationStrings(id, name), CUPTI_ACTIVITY_KIND_MEMCPY(srcDeviceId, dstDeviceId, migrationCause), ENUM_CUDA_UNIF_MEM_MIGRATION(id, label)
-- description: memory copies. Copy and memory kinds are resolved by label through the file's own ENUM tables. Files older than schema 3.0 have none: the copy kind then comes from MemcpyOperationStrings (legacy layout) or CUPTI's CUpti_ActivityMemcpyKind labels, the memory kind from the labels Nsight Systems writes (0 Pageable, 1 Pinned, 2 Device, ...; checked on the 2.9 and legacy real exports, where host-to-device copies read Pageable -> Device). Unified-memory migrations (copy kinds "Unified Host-to-Device" and the like, recorded with --cuda-um-cpu-page-faults / --cuda-um-gpu-page-faults) keep their direction, move managed memory (an unknown memory kind reads managed) and carry their cause from migrationCause (labels through ENUM_CUDA_UNIF_MEM_MIGRATION, else the labels Nsight Systems writes); explicit copies have migration NULL.
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
migration_cause(id, label) AS (
{% if has_table('ENUM_CUDA_UNIF_MEM_MIGRATION') %}
    SELECT id, label FROM ENUM_CUDA_UNIF_MEM_MIGRATION
{% else %}
    VALUES (0, 'Unknown'), (1, 'User prefetch'), (2, 'Page fault'), (3, 'Speculative prefecth'),
           (4, 'Eviction'), (5, 'Access counters')
{% endif %}
),
cause AS (
    SELECT DISTINCT id,
    CASE
        WHEN label LIKE '%fault%' THEN 'page_fault'
        WHEN label LIKE '%user%' THEN 'user_prefetch'
        WHEN label LIKE '%speculative%' OR label LIKE '%prefe%' THEN 'speculative_prefetch'
        WHEN label LIKE '%evict%' THEN 'eviction'
        WHEN label LIKE '%access%' THEN 'access_counters'
        ELSE 'unknown'
    END AS cause
    FROM migration_cause
),
mem_kind(id, label) AS (
{% if has_table('ENUM_CUDA_MEM_KIND') %}
    SELECT id, label FROM ENUM_CUDA_MEM_KIND
{% else %}
    VALUES (0, 'Pageable'), (1, 'Pinned'), (2, 'Device'), (3, 'Array'), (4, 'Managed'),
           (5, 'Device Static'), (6, 'Managed Static'), (7, 'Unknown')
{% endif %}
),
-- Labels are classified once per enum row, not once per copy: DISTINCT keeps SQLite from flattening
-- these small CTEs back into per-row LIKE comparisons (a third of a second per 100 k copies).
copy_dir AS (
    SELECT DISTINCT id,
    CASE
        WHEN label LIKE '%Host-to-Device%' OR label LIKE '%HtoD%'
          OR label LIKE '%Host-to-Array%' OR label LIKE '%HtoA%' THEN 'HtoD'
        WHEN label LIKE '%Device-to-Host%' OR label LIKE '%DtoH%'
          OR label LIKE '%Array-to-Host%' OR label LIKE '%AtoH%' THEN 'DtoH'
        WHEN label LIKE '%Peer-to-Peer%' OR label LIKE '%PtoP%' THEN 'PtoP'
        WHEN label LIKE '%Host-to-Host%' OR label LIKE '%HtoH%' THEN 'HtoH'
        WHEN label LIKE '%Device-to-Device%' OR label LIKE '%DtoD%'
          OR label LIKE '%Array%' OR label LIKE '%AtoD%' OR label LIKE '%DtoA%'
          OR label LIKE '%AtoA%' THEN 'DtoD'
        ELSE 'other'
    END AS direction,
    label LIKE '%Unified%' OR label LIKE '%UVM%' AS unified
    FROM copy_kind
),
mem AS (
    SELECT DISTINCT id,
    CASE label
        WHEN 'Pageable' THEN 'pageable' WHEN 'Pinned' THEN 'pinned'
        WHEN 'Device' THEN 'device' WHEN 'Device Static' THEN 'device'
        WHEN 'Managed' THEN 'managed' WHEN 'Managed Static' THEN 'managed'
        WHEN 'Array' THEN 'array' ELSE 'unknown'
    END AS kind
    FROM mem_kind
)
SELECT
    m.rowid AS row_id,
    (m.globalPid >> 24) & 16777215 AS pid,
    m.deviceId AS device,
    m.streamId AS stream,
    m.start AS start,
    m."end" AS "end",
    m.correlationId AS correlation_id,
    m.bytes AS bytes,
    coalesce(ck.direction, 'other') AS direction,
    CASE WHEN ck.unified AND coalesce(sk.kind, 'unknown') = 'unknown' THEN 'managed'
         ELSE coalesce(sk.kind, 'unknown') END AS src_kind,
    CASE WHEN ck.unified AND coalesce(dk.kind, 'unknown') = 'unknown' THEN 'managed'
         ELSE coalesce(dk.kind, 'unknown') END AS dst_kind,
    {% if has_column('CUPTI_ACTIVITY_KIND_MEMCPY', 'srcDeviceId') %}m.srcDeviceId{% else %}NULL{% endif %} AS src_device,
    {% if has_column('CUPTI_ACTIVITY_KIND_MEMCPY', 'dstDeviceId') %}m.dstDeviceId{% else %}NULL{% endif %} AS dst_device,
    CASE WHEN ck.unified THEN
        {% if has_column('CUPTI_ACTIVITY_KIND_MEMCPY', 'migrationCause') %}coalesce(mc.cause, 'unknown'){% else %}'unknown'{% endif %}
    END AS migration
FROM CUPTI_ACTIVITY_KIND_MEMCPY AS m
LEFT JOIN copy_dir AS ck ON ck.id = m.copyKind
LEFT JOIN mem AS sk ON sk.id = m.srcKind
LEFT JOIN mem AS dk ON dk.id = m.dstKind
{% if has_column('CUPTI_ACTIVITY_KIND_MEMCPY', 'migrationCause') %}
LEFT JOIN cause AS mc ON mc.id = m.migrationCause
{% endif %}
