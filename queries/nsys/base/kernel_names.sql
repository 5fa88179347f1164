-- relation: kernel_names
-- requires: StringIds(id, value)
-- requires_any: CUPTI_ACTIVITY_KIND_KERNEL(demangledName, shortName), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(graphId)
-- description: one row per distinct kernel name id of the kernels relation. Grouping the integer ids of the raw table first and resolving strings afterwards keeps this to one cheap pass, instead of joining a string to every one of millions of kernel rows; DISTINCT before GROUP BY makes that pass a lookup in a tree of a few distinct pairs per row instead of a sort of every row (5x faster on 1 M kernels). A CUDA graph traced at graph granularity is named as kernels.sql names it ("CUDA graph <graphId>", name_id -2 - graphId).
{% if has_table("CUPTI_ACTIVITY_KIND_KERNEL") %}
SELECT k.demangledName AS name_id, dn.value AS name, sn.value AS short_name
FROM (SELECT demangledName, min(shortName) AS shortName
      FROM (SELECT DISTINCT demangledName, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL)
      GROUP BY demangledName) AS k
LEFT JOIN StringIds AS dn ON dn.id = k.demangledName
LEFT JOIN StringIds AS sn ON sn.id = k.shortName
{% if has_table("CUPTI_ACTIVITY_KIND_GRAPH_TRACE") %}
UNION ALL
{% endif %}
{% endif %}
{% if has_table("CUPTI_ACTIVITY_KIND_GRAPH_TRACE") %}
SELECT -2 - graphId AS name_id, 'CUDA graph ' || graphId AS name, 'CUDA graph ' || graphId AS short_name
FROM (SELECT DISTINCT graphId FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE)
{% endif %}
