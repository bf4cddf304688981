-- name: parents
-- kind: view
-- params: none
-- returns: name VARCHAR, version VARCHAR, parent_name VARCHAR, parent_version VARCHAR,
--          relation VARCHAR, fingerprint VARCHAR
-- One row per lineage edge recorded in a manifest, or in the removal record of a version
-- whose manifest is gone (store/removals.py): the version and one of its inputs.
CREATE OR REPLACE VIEW parents AS
SELECT name, version, parent_name, parent_version, relation, fingerprint
FROM dload_raw_parents
