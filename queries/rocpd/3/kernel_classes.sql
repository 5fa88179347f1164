-- relation: kernel_classes
-- requires: rocpd_info_kernel_symbol(id, guid, display_name)
-- description: communication for RCCL's kernels (ncclDevKernel_*, ncclKernel_*, rcclGenericKernel, ... once a leading "void " is dropped, names starting with nccl or rccl, any case), compute for every other kernel; keyed by the kernels relation's name_id (the smallest symbol id with that display name), read from the small symbol table.
WITH names AS (
    SELECT min(id) AS name_id,
           lower(CASE WHEN display_name LIKE 'void %' THEN substr(display_name, 6) ELSE display_name END) AS base
    FROM rocpd_info_kernel_symbol
    WHERE coalesce(display_name, '') NOT GLOB '__amd_rocclr_fill*'
    GROUP BY guid, display_name
)
SELECT name_id,
       CASE WHEN base GLOB 'nccl*' OR base GLOB 'rccl*' THEN 'communication' ELSE 'compute' END AS class
FROM names
