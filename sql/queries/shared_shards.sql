-- name: shared_shards
-- kind: query
-- params: $name VARCHAR (dataset), $version VARCHAR (version id)
-- returns: version VARCHAR, other_name VARCHAR, other_version VARCHAR,
--          shared_shards BIGINT, shared_bytes BIGINT, shards BIGINT
-- The other versions (of any dataset) that reference some of the same shards as one
-- version, and how many shards and bytes they share (stored once). Only pairs with that
-- version: n versions sharing their shards make n * (n - 1) pairs in all.
WITH mine AS (
    SELECT version, digest, bytes FROM dload_raw_shards
    WHERE name = $name AND version = $version
), sizes AS (
    SELECT version, count(*) AS shards FROM mine GROUP BY version
)
SELECT m.version, o.name AS other_name, o.version AS other_version,
       count(*) AS shared_shards, sum(m.bytes)::BIGINT AS shared_bytes, s.shards
FROM mine AS m
JOIN dload_raw_shards AS o
  ON o.digest = m.digest AND NOT (o.name = $name AND o.version = m.version)
JOIN sizes AS s ON s.version = m.version
GROUP BY m.version, o.name, o.version, s.shards
ORDER BY m.version, shared_shards DESC, other_name, other_version
