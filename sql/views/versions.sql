-- name: versions
-- kind: view
-- params: none
-- returns: name VARCHAR, version VARCHAR, num_rows BIGINT, num_bytes BIGINT,
--          num_shards BIGINT, num_row_groups BIGINT, created TIMESTAMPTZ, "user" VARCHAR,
--          refs VARCHAR[], parents VARCHAR[], columns VARCHAR[], keys_sorted BOOLEAN,
--          meta JSON, recipe VARCHAR
-- Every stored version; `created` and `user` come from the first log entry naming it.
CREATE OR REPLACE VIEW versions AS
WITH first_seen AS (
    SELECT name, version, min(time) AS created, arg_min("user", time) AS "user"
    FROM dload_raw_log
    WHERE version IS NOT NULL
    GROUP BY name, version
), ref_lists AS (
    SELECT name, version, list(ref ORDER BY ref) AS refs
    FROM dload_raw_refs
    GROUP BY name, version
), parent_lists AS (
    SELECT name, version, list(parent_version ORDER BY parent_version) AS parents
    FROM dload_raw_parents
    GROUP BY name, version
)
SELECT
    v.name, v.version, v.num_rows, v.num_bytes, v.num_shards, v.num_row_groups,
    f.created, f."user",
    coalesce(r.refs, []::VARCHAR[]) AS refs,
    coalesce(p.parents, []::VARCHAR[]) AS parents,
    v.columns, v.keys_sorted, v.meta::JSON AS meta, v.recipe
FROM dload_raw_versions AS v
LEFT JOIN first_seen AS f USING (name, version)
LEFT JOIN ref_lists AS r USING (name, version)
LEFT JOIN parent_lists AS p USING (name, version)
ORDER BY v.name, f.created NULLS FIRST, v.version
