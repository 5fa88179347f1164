-- relation: processes
-- requires: PROCESSES(globalPid, pid, name)
-- description: profiled processes (absent from the legacy layout, where only thread names exist).
SELECT pid AS pid, max(name) AS name FROM PROCESSES GROUP BY pid
