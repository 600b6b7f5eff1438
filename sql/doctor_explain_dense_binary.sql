EXPLAIN (FORMAT JSON)
SELECT s.id FROM windowrag.sentences s
WHERE s.collection_id = {collection_id}
ORDER BY binary_quantize({vector})::bit({dimension}) <~> binary_quantize({probe_vector})::bit({dimension})
LIMIT 10
