-- relation: processes
-- requires: rocpd_info_process(guid, pid, command)
-- description: profiled processes and their command lines
SELECT pid, command AS name FROM rocpd_info_process
