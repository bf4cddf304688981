-- name: dataset_versions
-- kind: query
-- params: $name VARCHAR (dataset)
-- returns: version VARCHAR, created TIMESTAMPTZ, "user" VARCHAR, num_rows BIGINT,
--          num_bytes BIGINT, num_shards BIGINT, refs VARCHAR[], parents VARCHAR[]
-- The versions of one dataset, newest first.
SELECT version, created, "user", num_rows, num_bytes, num_shards, refs, parents
FROM versions
WHERE name = $name
ORDER BY created DESC NULLS LAST, version
