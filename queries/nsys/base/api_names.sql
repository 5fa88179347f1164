-- relation: api_names
-- requires: StringIds(id, value)
-- description: names for the api_calls relation's name_id, read from the string table (thousands of rows) rather than by grouping millions of API calls.
SELECT id AS name_id, value AS name FROM StringIds
