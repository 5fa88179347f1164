-- relation: meta
-- requires: rocpd_metadata(tag, value), rocpd_info_node(id, guid, hostname), rocpd_string(string), rocpd_kernel_dispatch(id), rocpd_memory_copy(id)
-- optional: rocpd_info_category(name)
-- description: host name, GUID, schema version, which writer produced the file, and GPU activity row counts
-- product: rocprof-sys when the file carries its `upid` metadata tag or its region categories are
-- interned, rocprofv3 when the rocprofv3 ones are; omitted when neither (no regions). kernel_dispatch_rows / memory_copy_rows let a report say
-- "API calls but no GPU activity recorded" (a degraded capture) instead of "the GPU did nothing".
-- mpi_category: '1' when the writer registered the region category "mpi" (schema 3 interns it in
-- rocpd_string, 4.0.0 in rocpd_info_category), so an empty mpi_calls relation means "no MPI call"
-- rather than "MPI not traced" (rocprofv3 never traces MPI; rocprof-sys only with ROCPROFSYS_USE_MPIP).
SELECT key, value FROM (
    SELECT 1 AS o, 'host_name' AS key, (SELECT hostname FROM rocpd_info_node ORDER BY id LIMIT 1) AS value
    UNION ALL SELECT 2, 'guid', (SELECT value FROM rocpd_metadata WHERE tag = 'guid' LIMIT 1)
    UNION ALL SELECT 3, 'schema_version', (SELECT value FROM rocpd_metadata WHERE tag = 'schema_version' LIMIT 1)
    UNION ALL SELECT 4, 'product', CASE
        WHEN EXISTS (SELECT 1 FROM rocpd_metadata WHERE tag = 'upid')
          OR EXISTS (SELECT 1 FROM rocpd_string
                     WHERE string IN ('rocm_hip_api', 'rocm_hsa_api', 'rocm_marker_api')) THEN 'rocprof-sys'
        WHEN EXISTS (SELECT 1 FROM rocpd_string
                     WHERE string IN ('HIP_RUNTIME_API_EXT', 'HIP_RUNTIME_API', 'HSA_CORE_API',
                                      'HSA_AMD_EXT_API', 'MARKER_CORE_API', 'MARKER_CORE_RANGE_API',
                                      'KERNEL_DISPATCH', 'MEMORY_COPY')) THEN 'rocprofv3'
        END
    UNION ALL SELECT 5, 'product_version',
        (SELECT value FROM rocpd_metadata WHERE tag IN ('rocprofiler_version', 'rocprofiler-sdk-version')
         LIMIT 1)
    UNION ALL SELECT 6, 'kernel_dispatch_rows', CAST((SELECT count(*) FROM rocpd_kernel_dispatch) AS TEXT)
    UNION ALL SELECT 7, 'memory_copy_rows', CAST((SELECT count(*) FROM rocpd_memory_copy) AS TEXT)
{% if has_table('rocpd_info_category') %}
    UNION ALL SELECT 8, 'mpi_category', CASE WHEN EXISTS (SELECT 1 FROM rocpd_info_category WHERE name = 'mpi')
                                             THEN '1' ELSE '0' END
{% else %}
    UNION ALL SELECT 8, 'mpi_category', CASE WHEN EXISTS (SELECT 1 FROM rocpd_string WHERE string = 'mpi')
                                             THEN '1' ELSE '0' END
{% endif %}
)
WHERE value IS NOT NULL
