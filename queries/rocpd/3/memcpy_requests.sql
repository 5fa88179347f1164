-- relation: memcpy_requests
-- requires: rocpd_region(guid, event_id, name_id), rocpd_event(id, guid, category_id), rocpd_arg(guid, event_id, name, value), rocpd_string(id, guid, string)
-- optional: rocpd_info_category(id, guid, name)
-- description: every hipMemcpy* call the host made, with the direction and size its arguments request (read only when the copy table is empty: a degraded capture)
-- rocpd keeps each HIP call's arguments (rocpd_arg, what the `region_args` view shows); the copies
-- the host asked for stay visible when rocpd_memory_copy is empty. hipMemcpy* names include
-- hipMemcpyToSymbol, 2D/3D forms and the Async variants; their size argument is named sizeBytes,
-- ByteCount, count or size. The HIP categories of both writers are matched (schema 3 interns them in
-- rocpd_string: rocprofv3's HIP_RUNTIME_API(_EXT), rocprof-sys's rocm_hip_api; schema 4.0.0 names
-- them in rocpd_info_category, in lower case: hip_api), so rocprof-sys's rocm_marker_api copy of
-- each call is not counted twice. Names and categories are resolved in small CTEs first, so a
-- 20 M-region file costs one region scan. Direction: hipMemcpyKind as rocpd prints it, the
-- enumerator or its value (hip_runtime_api.h: HostToHost 0, HostToDevice 1, DeviceToHost 2,
-- DeviceToDevice 3, Default 4), else the call's name; 'unknown' when the runtime infers it
-- (hipMemcpyDefault).
WITH cat AS (
{% if has_table('rocpd_info_category') %}
    SELECT DISTINCT guid, id FROM rocpd_info_category WHERE name IN ('hip_api')
{% else %}
    SELECT DISTINCT guid, id FROM rocpd_string
    WHERE string IN ('HIP_RUNTIME_API', 'HIP_RUNTIME_API_EXT', 'rocm_hip_api')
{% endif %}
), names AS (
    SELECT DISTINCT guid, id, string AS name FROM rocpd_string WHERE string GLOB 'hipMemcpy*'
), calls AS (
    SELECT r.guid, r.event_id, n.name
    FROM rocpd_region r
    CROSS JOIN names n ON n.id = r.name_id AND n.guid = r.guid
    CROSS JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
    WHERE (e.category_id, e.guid) IN (SELECT id, guid FROM cat)
), args AS (
    SELECT a.guid, a.event_id,
           max(CASE WHEN a.name IN ('sizeBytes', 'ByteCount', 'count', 'size')
                    THEN CAST(a.value AS INTEGER) END) AS bytes,
           max(CASE WHEN a.name = 'kind' THEN a.value END) AS kind
    FROM rocpd_arg a
    WHERE a.name IN ('sizeBytes', 'ByteCount', 'count', 'size', 'kind')
      AND (a.guid, a.event_id) IN (SELECT guid, event_id FROM calls)
    GROUP BY a.guid, a.event_id
)
SELECT
    calls.name AS name,
    CASE
        WHEN args.kind IN ('hipMemcpyHostToDevice', '1') THEN 'HtoD'
        WHEN args.kind IN ('hipMemcpyDeviceToHost', '2') THEN 'DtoH'
        WHEN args.kind IN ('hipMemcpyDeviceToDevice', '3') THEN 'DtoD'
        WHEN args.kind IN ('hipMemcpyHostToHost', '0') THEN 'HtoH'
        WHEN calls.name GLOB 'hipMemcpyHtoD*' THEN 'HtoD'
        WHEN calls.name GLOB 'hipMemcpyDtoH*' THEN 'DtoH'
        WHEN calls.name GLOB 'hipMemcpyDtoD*' THEN 'DtoD'
        WHEN calls.name GLOB 'hipMemcpyPeer*' THEN 'PtoP'
        ELSE 'unknown'
    END AS direction,
    args.bytes AS bytes
FROM calls LEFT JOIN args ON args.guid = calls.guid AND args.event_id = calls.event_id
