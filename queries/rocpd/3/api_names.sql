-- relation: api_names
-- requires: rocpd_string(id, string)
-- description: names for the api_calls relation's name_id (a rocpd_string id), read from the string table rather than by grouping tens of millions of regions.
SELECT id AS name_id, string AS name FROM rocpd_string
