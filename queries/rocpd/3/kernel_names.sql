-- relation: kernel_names
-- requires: rocpd_info_kernel_symbol(id, guid, display_name)
-- description: one row per distinct kernel name id of the kernels relation (the smallest symbol id carrying a display name, as kernels.sql defines it), read from the small symbol table rather than from the dispatches. The short name drops a leading return type "void " and everything from the first template bracket or parenthesis, as Nsight Systems' shortName does.
WITH names AS (
    SELECT min(id) AS name_id, display_name AS name,
           CASE WHEN display_name LIKE 'void %' THEN substr(display_name, 6) ELSE display_name END AS base
    FROM rocpd_info_kernel_symbol
    GROUP BY guid, display_name
), cut AS (
    SELECT name_id, name, base,
           CASE WHEN instr(base, '<') > 0 AND (instr(base, '(') = 0 OR instr(base, '<') < instr(base, '('))
                THEN instr(base, '<') ELSE instr(base, '(') END AS p
    FROM names
)
SELECT name_id, name,
       rtrim(CASE WHEN p > 0 THEN substr(base, 1, p - 1) ELSE base END) AS short_name
FROM cut
