-- name: refs
-- kind: view
-- params: none
-- returns: name VARCHAR, ref VARCHAR, version VARCHAR, seq BIGINT
-- Every ref (latest and tags) of every dataset, read fresh at each query.
CREATE OR REPLACE VIEW refs AS
SELECT name, ref, version, seq
FROM dload_raw_refs
