-- relation: kernel_classes
-- requires: CUPTI_ACTIVITY_KIND_KERNEL(demangledName), StringIds(id, value)
-- description: communication for NCCL's kernels (ncclKernel_*, ncclDevKernel_*, ... once a leading "void " is dropped, names starting with nccl or rccl, any case), compute for every other kernel; keyed by the kernels relation's name_id (demangledName). The distinct name ids are collected first, so the string test runs once per name, not per kernel.
WITH ids AS (
    SELECT DISTINCT demangledName AS name_id FROM CUPTI_ACTIVITY_KIND_KERNEL
), names AS (
    SELECT ids.name_id,
           lower(CASE WHEN s.value LIKE 'void %' THEN substr(s.value, 6) ELSE s.value END) AS base
    FROM ids LEFT JOIN StringIds AS s ON s.id = ids.name_id
)
SELECT name_id,
       CASE WHEN base GLOB 'nccl*' OR base GLOB 'rccl*' THEN 'communication' ELSE 'compute' END AS class
FROM names
