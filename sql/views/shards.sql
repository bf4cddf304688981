-- name: shards
-- kind: view
-- params: none
-- returns: name VARCHAR, version VARCHAR, shard INTEGER, digest VARCHAR, bytes BIGINT,
--          rows BIGINT, row_offset BIGINT, row_groups INTEGER, key_min VARCHAR,
--          key_max VARCHAR, versions_sharing BIGINT, datasets_sharing BIGINT
-- One row per (version, shard). A shard is content-addressed, so the same digest in
-- several versions is stored once: `versions_sharing` counts the versions that list it.
-- A version's key index parts (under shards/ too) are not listed here.
CREATE OR REPLACE VIEW shards AS
SELECT
    name, version, shard, digest, bytes, rows, row_offset, row_groups, key_min, key_max,
    count(*) OVER (PARTITION BY digest) AS versions_sharing,
    count(DISTINCT name) OVER (PARTITION BY digest) AS datasets_sharing
FROM dload_raw_shards
ORDER BY name, version, shard
