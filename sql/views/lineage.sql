-- name: lineage
-- kind: view
-- params: none
-- returns: name VARCHAR, version VARCHAR, direction VARCHAR ('ancestor' | 'descendant'),
--          related_name VARCHAR, related_version VARCHAR, relation VARCHAR, depth INTEGER
-- The transitive closure of `parents` in both directions. For every version: each
-- ancestor (its inputs, their inputs, ...) and each descendant, with the distance in
-- steps and the relation (append, derive, ...) of the edge that reaches it.
CREATE OR REPLACE VIEW lineage AS
WITH RECURSIVE up(name, version, related_name, related_version, relation, first_relation,
                  depth) AS (
    SELECT name, version, parent_name, parent_version, relation, relation, 1
    FROM dload_raw_parents
    UNION
    SELECT up.name, up.version, p.parent_name, p.parent_version, p.relation,
           up.first_relation, up.depth + 1
    FROM up
    JOIN dload_raw_parents AS p
      ON p.name = up.related_name AND p.version = up.related_version
    -- A path longer than the number of edges repeats a version: only a hostile root has one
    WHERE up.depth < (SELECT count(*) FROM dload_raw_parents)
)
-- UNION (not UNION ALL) keeps one row per (pair, depth, relations), not one per path: a
-- history whose versions have two inputs sharing an ancestor (pseudo-labelling: labels_k+1
-- from labels_k and preds_k) has exponentially many paths (42 versions: 90 s and 11 GB
-- with one row per path) but only versions x ancestors x depths rows.
-- Each (version, related version) pair is one row at its smallest depth, however many
-- paths reach it (a diamond: D from A@v1 and from A@v2, an append of A@v1). The relation
-- shown is that of the edge next to the related version on a shortest path (the top edge
-- of the chain for an ancestor, the bottom one for a descendant); a tie takes the first
-- relation by name, so the answer does not depend on the order rows come in.
SELECT name, version, 'ancestor' AS direction, related_name, related_version,
       arg_min(relation, (depth, relation)) AS relation, min(depth)::INTEGER AS depth
FROM up GROUP BY name, version, related_name, related_version
UNION ALL
SELECT related_name, related_version, 'descendant', name, version,
       arg_min(first_relation, (depth, first_relation)), min(depth)::INTEGER
FROM up GROUP BY related_name, related_version, name, version
