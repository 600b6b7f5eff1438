-- Indexes of the windowrag tables: valid and ready (a failed CREATE INDEX CONCURRENTLY leaves an
-- invalid one), their size, and how often they were scanned since the statistics were reset.
SELECT i.indexrelid::regclass::text AS index_name, t.relname AS table_name, x.indisvalid AS valid,
       x.indisready AS ready, pg_relation_size(i.indexrelid) AS bytes, coalesce(i.idx_scan, 0) AS scans
FROM pg_stat_user_indexes i
JOIN pg_index x ON x.indexrelid = i.indexrelid
JOIN pg_class t ON t.oid = i.relid
WHERE i.schemaname = 'windowrag'
ORDER BY t.relname, 1
