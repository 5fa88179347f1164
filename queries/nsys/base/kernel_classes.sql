-- relation: kernel_classes
-- requires: StringIds(id, value)
-- requires_any: CUPTI_ACTIVITY_KIND_KERNEL(demangledName), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(graphId)
-- description: communication for NCCL's kernels (ncclKernel_*, ncclDevKernel_*, ... once a leading "void " is dropped, names starting with nccl or rccl, any case), compute for every other kernel; keyed by the kernels relation's name_id (demangledName). The distinct name ids are collected first, so the string test runs once per name, not per kernel. A CUDA graph traced at graph granularity (name_id -2 - graphId, as kernels.sql gives it) is class graph: what runs inside is not recorded.
{% if has_table("CUPTI_ACTIVITY_KIND_KERNEL") %}
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
{% if has_table("CUPTI_ACTIVITY_KIND_GRAPH_TRACE") %}
UNION ALL
{% endif %}
{% endif %}
{% if has_table("CUPTI_ACTIVITY_KIND_GRAPH_TRACE") %}
SELECT -2 - graphId AS name_id, 'graph' AS class
FROM (SELECT DISTINCT graphId FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE)
{% endif %}
