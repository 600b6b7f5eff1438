EXPLAIN (FORMAT JSON)
SELECT s.id FROM windowrag.sentences s
WHERE s.collection_id = {collection_id}
ORDER BY s.embedding::vector({dimension}) <=> {probe}::vector({dimension})
LIMIT 10
