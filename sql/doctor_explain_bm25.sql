EXPLAIN (FORMAT JSON)
SELECT b.sentence_ids FROM windowrag.bm25_blocks b
WHERE b.collection_id = %(collection_id)s AND b.lexeme = %(lexeme)s
ORDER BY b.block
LIMIT 16
