-- relation: markers
-- requires: rocpd_region(id, guid, pid, tid, start, end, name_id, event_id), rocpd_event(id, guid, category_id), rocpd_string(id, guid, string)
-- description: user rocTX ranges; rocprof-sys's marker copies of every HIP call are dropped
-- rocprof-sys records one rocm_marker_api region per HIP call, with the call's name: regions whose
-- name is a runtime API name (GLOB 'hip*', '__hip*', 'hsa_*', case-sensitive) are never markers, in
-- either writer, so a user range named like that is lost. Deciding this on the interned strings
-- (a few thousand) instead of matching every marker against the HIP regions keeps the query to one
-- region scan with an event lookup only for non-API names. roctx API function names are dropped.
-- rocpd does not tell push/pop from start/end ranges: kind is push_pop; no domain.
WITH cat AS (
    SELECT DISTINCT guid, id FROM rocpd_string
    WHERE string IN ('MARKER_CORE_API', 'MARKER_CORE_RANGE_API', 'ROCTX', 'rocm_marker_api')
), names AS (
    SELECT DISTINCT guid, id, string AS name FROM rocpd_string
    WHERE EXISTS (SELECT 1 FROM cat)
      AND NOT (string GLOB 'hip*' OR string GLOB '__hip*' OR string GLOB 'hsa_*')
      AND string NOT IN ('roctxRangePushA', 'roctxRangePop', 'roctxRangeStartA', 'roctxRangeStop', 'roctxMarkA')
)
SELECT
    r.id AS row_id,
    r.pid AS pid,
    r.tid AS tid,
    r.start AS start,
    r."end" AS "end",
    n.name AS name,
    NULL AS domain,
    'push_pop' AS kind
FROM rocpd_region r
CROSS JOIN names n ON n.id = r.name_id AND n.guid = r.guid
CROSS JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
WHERE EXISTS (SELECT 1 FROM cat) AND (e.guid, e.category_id) IN (SELECT guid, id FROM cat)
