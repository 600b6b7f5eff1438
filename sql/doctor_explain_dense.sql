EXPLAIN (FORMAT JSON)
SELECT s.id FROM windowrag.sentences s
WHERE s.collection_id = {collection_id}
ORDER BY {key} <=> {probe_key}
LIMIT 10
