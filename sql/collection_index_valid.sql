-- Whether the collection's HNSW index can serve queries: true (valid and ready), false (left
-- invalid by an interrupted CREATE INDEX CONCURRENTLY), no row (missing).
SELECT x.indisvalid AND x.indisready
FROM pg_class i
JOIN pg_namespace n ON n.oid = i.relnamespace
JOIN pg_index x ON x.indexrelid = i.oid
WHERE n.nspname = 'windowrag' AND i.relname = %s
