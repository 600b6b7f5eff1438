-- Postings written as rows since the last pack, and packed postings of deleted sentences,
-- against those packed (store/bm25.py decides from these).
SELECT s.pending_postings, s.stale_postings, s.packed_postings
FROM windowrag.bm25_stats s WHERE s.collection_id = %s
