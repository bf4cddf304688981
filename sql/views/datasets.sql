-- name: datasets
-- kind: view
-- params: none
-- returns: name VARCHAR, latest VARCHAR, num_versions BIGINT, num_rows BIGINT,
--          num_bytes BIGINT, num_shards BIGINT, tags VARCHAR[], created TIMESTAMPTZ,
--          updated TIMESTAMPTZ
-- One row per dataset (a name with a `latest` ref, as `datasets()` and `dload ls` count them:
-- a first commit that did not finish is no dataset); sizes are those of the `latest` version;
-- `created` is the first commit since the dataset was last removed as a whole (`dload rm NAME`).
CREATE OR REPLACE VIEW datasets AS
WITH counts AS (
    SELECT name, count(*) AS num_versions FROM dload_raw_versions GROUP BY name
), latest AS (
    SELECT name, version FROM dload_raw_refs WHERE ref = 'latest'
), tags AS (
    SELECT name, list(ref ORDER BY ref) AS tags
    FROM dload_raw_refs WHERE ref <> 'latest' GROUP BY name
), gone AS (  -- a dataset removed and created again was created the second time
    SELECT name, max(time) AS at FROM dload_raw_log
    WHERE ref = 'latest' AND action = 'delete' GROUP BY name
), times AS (
    SELECT lg.name,
           min(lg.time) FILTER (WHERE g.at IS NULL
                                OR (lg.time > g.at AND lg.ref = 'latest'
                                    AND lg.action <> 'delete')) AS created,
           max(lg.time) AS updated
    FROM dload_raw_log AS lg LEFT JOIN gone AS g USING (name)
    GROUP BY lg.name
)
SELECT
    c.name, l.version AS latest, c.num_versions,
    v.num_rows, v.num_bytes, v.num_shards,
    coalesce(t.tags, []::VARCHAR[]) AS tags,
    ti.created, ti.updated
FROM counts AS c
JOIN latest AS l USING (name)
LEFT JOIN dload_raw_versions AS v ON v.name = c.name AND v.version = l.version
LEFT JOIN tags AS t ON t.name = c.name
LEFT JOIN times AS ti ON ti.name = c.name
ORDER BY c.name
