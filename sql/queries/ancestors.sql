-- name: ancestors
-- kind: query
-- params: $name VARCHAR (dataset), $version VARCHAR (version id)
-- returns: depth INTEGER, relation VARCHAR, name VARCHAR, version VARCHAR,
--          num_rows BIGINT (NULL when that version was removed)
-- Everything a version was made from, nearest first.
SELECT l.depth, l.relation, l.related_name AS name, l.related_version AS version,
       v.num_rows
FROM lineage AS l
LEFT JOIN dload_raw_versions AS v
  ON v.name = l.related_name AND v.version = l.related_version
WHERE l.name = $name AND l.version = $version AND l.direction = 'ancestor'
ORDER BY l.depth, l.related_name, l.related_version
