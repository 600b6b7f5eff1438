EXPLAIN (FORMAT JSON)
SELECT s.id FROM windowrag.sentences s
WHERE s.collection_id = {collection_id}
ORDER BY binary_quantize(s.embedding)::bit({dimension}) <~> binary_quantize({probe}::halfvec({dimension}))::bit({dimension})
LIMIT 10
