-- name: ancestors
-- kind: query
-- params: $name VARCHAR (dataset), $version VARCHAR (version id)
-- returns: depth INTEGER, relation VARCHAR, name VARCHAR, version VARCHAR,
--          num_rows BIGINT (NULL when that version was removed)
-- Everything a version was made from, nearest first: the rows of the `lineage` view with
-- direction 'ancestor' for this version, walked from it alone (the view walks from every
-- version). The same rules: each ancestor once, at its smallest
-- depth, with the relation of the edge next to it (a tie: the first by name).
WITH RECURSIVE up(related_name, related_version, relation, depth) AS (
    SELECT parent_name, parent_version, relation, 1
    FROM dload_raw_parents
    WHERE name = $name AND version = $version
    UNION  -- one row per (version, depth, relation), not per path (lineage.sql)
    SELECT p.parent_name, p.parent_version, p.relation, up.depth + 1
    FROM up
    JOIN dload_raw_parents AS p
      ON p.name = up.related_name AND p.version = up.related_version
    WHERE up.depth < (SELECT count(*) FROM dload_raw_parents)  -- (a hostile cycle)
), nearest AS (
    SELECT related_name, related_version,
           arg_min(relation, (depth, relation)) AS relation, min(depth)::INTEGER AS depth
    FROM up GROUP BY related_name, related_version
)
SELECT n.depth, n.relation, n.related_name AS name, n.related_version AS version,
       v.num_rows
FROM nearest AS n
LEFT JOIN dload_raw_versions AS v
  ON v.name = n.related_name AND v.version = n.related_version
ORDER BY n.depth, n.related_name, n.related_version
