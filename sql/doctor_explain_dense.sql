EXPLAIN (FORMAT JSON)
SELECT s.id FROM windowrag.sentences s
WHERE s.collection_id = {collection_id}
ORDER BY s.embedding::halfvec({dimension}) <=> {probe}::halfvec({dimension})
LIMIT 10
