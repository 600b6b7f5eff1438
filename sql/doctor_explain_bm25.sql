EXPLAIN (FORMAT JSON)
SELECT p.sentence_id FROM windowrag.bm25_postings p
WHERE p.collection_id = %(collection_id)s AND p.lexeme = %(lexeme)s
ORDER BY p.impact DESC
LIMIT 100
