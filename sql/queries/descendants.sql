-- name: descendants
-- kind: query
-- params: $name VARCHAR (dataset), $version VARCHAR (version id)
-- returns: depth INTEGER, relation VARCHAR, name VARCHAR, version VARCHAR,
--          num_rows BIGINT (NULL when that version was removed)
-- Everything made from a version (appends and derived datasets), nearest first: the rows
-- of the `lineage` view with direction 'descendant' for this version, walked down from it
-- alone. The same rules: each descendant once, at its smallest depth, with the relation of
-- the edge next to it (its own parent record).
WITH RECURSIVE down(related_name, related_version, relation, depth) AS (
    SELECT name, version, relation, 1
    FROM dload_raw_parents
    WHERE parent_name = $name AND parent_version = $version
    UNION  -- one row per (version, depth, relation), not per path (lineage.sql)
    SELECT p.name, p.version, p.relation, down.depth + 1
    FROM down
    JOIN dload_raw_parents AS p
      ON p.parent_name = down.related_name AND p.parent_version = down.related_version
    WHERE down.depth < (SELECT count(*) FROM dload_raw_parents)  -- (a hostile cycle)
), nearest AS (
    SELECT related_name, related_version,
           arg_min(relation, (depth, relation)) AS relation, min(depth)::INTEGER AS depth
    FROM down GROUP BY related_name, related_version
)
SELECT n.depth, n.relation, n.related_name AS name, n.related_version AS version,
       v.num_rows
FROM nearest AS n
LEFT JOIN dload_raw_versions AS v
  ON v.name = n.related_name AND v.version = n.related_version
ORDER BY n.depth, n.related_name, n.related_version
