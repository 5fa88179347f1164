-- relation: markers
-- requires: rocpd_region(id, guid, track_id, name_id, start_id, end_id, event_id), rocpd_event(id, guid, category_id, extdata), rocpd_info_category(id, guid, name), rocpd_track(id, guid, pid, tid), rocpd_timestamp(id, guid, value), rocpd_string(id, guid, string), rocpd_info_thread(id, guid, tid)
-- optional: rocpd_sample(guid, track_id, name_id, timestamp_id, event_id)
-- description: rocTX ranges and instant marks of a schema 4.0.0 file: regions and samples in the marker_api category, times through rocpd_timestamp, thread through the track. As in the schema 3 set: a roctx operation record (roctxThreadRangeA, roctxProcessRangeA, roctxMarkA) carries the user's text in the event's extdata $.message; runtime API names and the roctx API calls themselves are never markers; a record without a message keeps its operation name; kind start_end for roctxProcessRangeA, instant for zero duration, else push_pop; no domain; read in one piece (row_id NULL).
WITH cat AS (
    SELECT DISTINCT guid, id FROM rocpd_info_category WHERE name = 'marker_api'
), names AS (
    SELECT DISTINCT guid, id, string AS name,
           string IN ('roctxThreadRangeA', 'roctxProcessRangeA', 'roctxMarkA') AS text_in_event,
           CASE WHEN string = 'roctxProcessRangeA' THEN 'start_end' ELSE 'push_pop' END AS kind
    FROM rocpd_string
    WHERE EXISTS (SELECT 1 FROM cat)
      AND NOT (string GLOB 'hip*' OR string GLOB '__hip*' OR string GLOB 'hsa_*')
      AND string NOT IN ('roctxRangePushA', 'roctxRangePop', 'roctxRangeStartA', 'roctxRangeStop',
                         'roctxGetThreadId')
), ranges AS (
    SELECT r.guid, r.track_id, r.start_id, r.end_id,
           CASE WHEN n.text_in_event THEN coalesce(json_extract(e.extdata, '$.message'), n.name)
                ELSE n.name END AS name,
           n.kind
    FROM rocpd_region r
    CROSS JOIN names n ON n.id = r.name_id AND n.guid = r.guid
    CROSS JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
    WHERE EXISTS (SELECT 1 FROM cat) AND (e.category_id, e.guid) IN (SELECT id, guid FROM cat)
)
SELECT
    NULL AS row_id,
    tr.pid AS pid,
    coalesce(th.tid, tr.tid) AS tid,
    ts.value AS start,
    te.value AS "end",
    ranges.name AS name,
    NULL AS domain,
    CASE WHEN ts.value = te.value THEN 'instant' ELSE ranges.kind END AS kind
FROM ranges
LEFT JOIN rocpd_track tr ON tr.id = ranges.track_id AND tr.guid = ranges.guid
LEFT JOIN rocpd_info_thread th ON th.id = tr.tid AND th.guid = tr.guid
LEFT JOIN rocpd_timestamp ts ON ts.id = ranges.start_id AND ts.guid = ranges.guid
LEFT JOIN rocpd_timestamp te ON te.id = ranges.end_id AND te.guid = ranges.guid
{% if has_table('rocpd_sample') %}
UNION ALL
SELECT
    NULL,
    tr.pid,
    coalesce(th.tid, tr.tid),
    ti.value,
    ti.value,
    CASE WHEN n.text_in_event THEN coalesce(json_extract(e.extdata, '$.message'), n.name) ELSE n.name END,
    NULL,
    'instant'
FROM rocpd_sample s
CROSS JOIN names n ON n.id = s.name_id AND n.guid = s.guid
CROSS JOIN rocpd_event e ON e.id = s.event_id AND e.guid = s.guid
LEFT JOIN rocpd_track tr ON tr.id = s.track_id AND tr.guid = s.guid
LEFT JOIN rocpd_info_thread th ON th.id = tr.tid AND th.guid = tr.guid
LEFT JOIN rocpd_timestamp ti ON ti.id = s.timestamp_id AND ti.guid = s.guid
WHERE EXISTS (SELECT 1 FROM cat) AND (e.category_id, e.guid) IN (SELECT id, guid FROM cat)
{% endif %}
