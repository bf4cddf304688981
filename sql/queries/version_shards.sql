-- name: version_shards
-- kind: query
-- params: $name VARCHAR (dataset), $version VARCHAR (version id)
-- returns: shard INTEGER, digest VARCHAR, bytes BIGINT, rows BIGINT, row_groups INTEGER,
--          key_min VARCHAR, key_max VARCHAR, versions_sharing BIGINT
-- The shards of one version in manifest order, with how many versions share each.
SELECT shard, digest, bytes, rows, row_groups, key_min, key_max, versions_sharing
FROM shards
WHERE name = $name AND version = $version
ORDER BY shard
