-- Documents, sections and sentences go with the collection (ON DELETE CASCADE); the statement
-- triggers on windowrag.sentences remove its BM25 terms and postings, bm25_stats cascades.
DELETE FROM windowrag.collections WHERE id = %s RETURNING id
