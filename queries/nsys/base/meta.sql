-- relation: meta
-- requires: StringIds(id)
-- optional: META_DATA_EXPORT(name, value), EXPORT_META_DATA(name, value), TARGET_INFO_SYSTEM_ENV(name, value), TARGET_INFO_SESSION_START_TIME(utcTime)
-- description: capture facts: host name, product and schema version, capture start.
{% set meta_table = 'META_DATA_EXPORT' if has_table('META_DATA_EXPORT') else ('EXPORT_META_DATA' if has_table('EXPORT_META_DATA') else None) %}
SELECT 'schema_layout' AS key, '{{ meta_table or "legacy (no export metadata table)" }}' AS value
{% if meta_table %}
UNION ALL SELECT 'product_version', value FROM {{ meta_table }} WHERE name = 'EXPORT_PRODUCT_VERSION'
UNION ALL SELECT 'export_host', value FROM {{ meta_table }} WHERE name = 'EXPORT_HOST'
{% endif %}
{% if has_table('TARGET_INFO_SYSTEM_ENV') %}
UNION ALL SELECT 'host_name', max(value) FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname' HAVING count(*) > 0
{% endif %}
{% if has_table('TARGET_INFO_SESSION_START_TIME') %}
UNION ALL SELECT 'capture_start_utc', max(utcTime) FROM TARGET_INFO_SESSION_START_TIME HAVING count(*) > 0
{% endif %}
