-- name: ref_moves
-- kind: query
-- params: $name VARCHAR (dataset)
-- returns: time TIMESTAMPTZ, ref VARCHAR, action VARCHAR, previous VARCHAR,
--          version VARCHAR, "user" VARCHAR, host VARCHAR, seq BIGINT
-- Who moved which ref of a dataset, when, from where to where; oldest first.
SELECT time, ref, action, previous, version, "user", host, seq
FROM dload_raw_log
WHERE name = $name
ORDER BY time, ref, seq
