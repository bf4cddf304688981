-- name: log
-- kind: view
-- params: none
-- returns: name VARCHAR, ref VARCHAR, seq BIGINT, time TIMESTAMPTZ, action VARCHAR,
--          version VARCHAR, previous VARCHAR, user VARCHAR, host VARCHAR
-- The append-only history of ref moves (commit, append, derive, tag, rm, delete), oldest
-- first, and a row per removed version (ref NULL, action rm, previous its id).
CREATE OR REPLACE VIEW log AS
SELECT name, ref, seq, time, action, version, previous, "user", host
FROM dload_raw_log
ORDER BY time, name, ref, seq
