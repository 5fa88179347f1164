-- relation: threads
-- requires: rocpd_info_thread(guid, pid, tid, name)
-- description: threads of the profiled processes
SELECT pid, tid, name FROM rocpd_info_thread
