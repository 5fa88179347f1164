-- relation: cpu_samples
-- requires: COMPOSITE_EVENTS(start, globalTid)
-- description: CPU sampling events (nsys --sample=process-tree / cpu): one row per sample of a host thread. Their presence tells whether the capture can show what the host was doing during a GPU idle gap.
SELECT
    c.rowid AS row_id,
    (c.globalTid >> 24) & 16777215 AS pid,
    c.globalTid & 16777215 AS tid,
    c.start AS time
FROM COMPOSITE_EVENTS AS c
