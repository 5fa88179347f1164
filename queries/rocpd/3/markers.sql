-- relation: markers
-- requires: rocpd_region(id, guid, pid, tid, start, end, name_id, event_id), rocpd_event(id, guid, category_id, extdata), rocpd_string(id, guid, string), rocpd_info_thread(id, guid, tid)
-- optional: rocpd_sample(guid, track_id, timestamp, event_id), rocpd_track(id, guid, pid, tid)
-- description: user rocTX ranges and instant marks, with the user's text. rocprofv3 names a range region after the roctx operation (roctxThreadRangeA for push/pop, roctxProcessRangeA for start/stop) and keeps the text in the event's extdata ($.message); a mark (roctxMarkA, start == end) goes to rocpd_sample. rocprof-sys names its rocm_marker_api regions by the text and mirrors every HIP call there under the call's name: those mirrors are dropped.
-- Mapping decisions:
-- * Regions whose name is a runtime API name (GLOB 'hip*', '__hip*', 'hsa_*', case-sensitive) are
--   never markers, in either writer (rocprof-sys's mirrors of HIP calls), so a rocprof-sys user
--   range named like that is lost; rocprofv3's texts are not affected (they live in extdata).
--   Deciding on the interned strings (a few thousand) keeps the query to one region scan with an
--   event lookup only for the remaining names.
-- * Categories: MARKER_CORE_RANGE_API (rocprofv3's rocTX records), rocm_marker_api (rocprof-sys),
--   ROCTX (older tools). Not MARKER_CORE_API: rocprofv3 files it under the roctx API calls
--   themselves (roctxRangePushA, roctxRangePop, ...), which are not ranges; those names are
--   dropped in any category, and so is roctxGetThreadId. A range record whose event carries no
--   message keeps its operation name (roctxThreadRangeA): the range happened, its text is unknown.
--   The message is extracted once per row (JSON parsing is the main cost of this relation).
-- * kind: start_end for roctxProcessRangeA, instant for a record of zero duration (every sample,
--   and rocprof-sys's marks), else push_pop. rocTX has no domains: domain is NULL.
-- * tid is the OS thread id (rocprof-sys stores the rocpd_info_thread key in the region and track).
-- * Regions and samples are two tables: the relation has no single driving table, so row_id is
--   NULL and it is read in one piece (markers are a small share of the regions).
-- * Every region is looked up in `names` (a few thousand strings) before its event: the guid is
--   matched with a unary + so that it stays out of that lookup's key (compared only on the rows
--   whose id matched), and the thread row is read only for the rows kept.
WITH cat AS (
    SELECT DISTINCT guid, id FROM rocpd_string
    WHERE string IN ('MARKER_CORE_RANGE_API', 'ROCTX', 'rocm_marker_api')
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
    SELECT r.guid, r.pid, r.tid, r.start, r."end",
           CASE WHEN n.text_in_event THEN coalesce(json_extract(e.extdata, '$.message'), n.name)
                ELSE n.name END AS name,
           n.kind
    FROM rocpd_region r
    CROSS JOIN names n ON n.id = r.name_id AND +n.guid = r.guid
    CROSS JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
    WHERE EXISTS (SELECT 1 FROM cat) AND (e.category_id, e.guid) IN (SELECT id, guid FROM cat)
    -- LIMIT -1 (no limit) keeps SQLite from pushing conditions put on this relation down into the
    -- region loop: pa's domain checks on start and end would then run on every region, before the
    -- name lookup drops the nine in ten that are API calls, instead of on the ranges kept (the
    -- summary's marker statement: 7.5-8.0 s of CPU at 20 M regions without it, 7.2 s with it)
    LIMIT -1
)
SELECT
    NULL AS row_id,
    ranges.pid AS pid,
    coalesce(t.tid, ranges.tid) AS tid,
    ranges.start AS start,
    ranges."end" AS "end",
    ranges.name AS name,
    NULL AS domain,
    CASE WHEN ranges.start = ranges."end" THEN 'instant' ELSE ranges.kind END AS kind
FROM ranges
LEFT JOIN rocpd_info_thread t ON t.id = ranges.tid AND t.guid = ranges.guid
{% if has_table('rocpd_sample') and has_table('rocpd_track') %}
UNION ALL
SELECT
    NULL,
    k.pid,
    coalesce(t.tid, k.tid),
    s.timestamp,
    s.timestamp,
    json_extract(e.extdata, '$.message'),
    NULL,
    'instant'
FROM rocpd_sample s
CROSS JOIN rocpd_event e ON e.id = s.event_id AND e.guid = s.guid
JOIN rocpd_track k ON k.id = s.track_id AND k.guid = s.guid
LEFT JOIN rocpd_info_thread t ON t.id = k.tid AND t.guid = k.guid
WHERE EXISTS (SELECT 1 FROM cat) AND (e.category_id, e.guid) IN (SELECT id, guid FROM cat)
  -- a sample has no operation name here (its track is named after the category); rocprofv3 gives
  -- roctxGetThreadId its own name as message, which is not a mark
  AND json_extract(e.extdata, '$.message') IS NOT NULL AND json_extract(e.extdata, '$.message') <> 'roctxGetThreadId'
{% endif %}
