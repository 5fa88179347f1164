-- relation: kernel_names
-- requires: rocpd_info_kernel_symbol(id, guid, display_name)
-- description: one row per distinct kernel name id of the kernels relation (the smallest symbol id carrying a display name, as kernels.sql defines it), read from the small symbol table rather than from the dispatches.
SELECT min(id) AS name_id,
       display_name AS name,
       CASE WHEN instr(display_name, '(') > 0
            THEN substr(display_name, 1, instr(display_name, '(') - 1)
            ELSE display_name END AS short_name
FROM rocpd_info_kernel_symbol
GROUP BY guid, display_name
