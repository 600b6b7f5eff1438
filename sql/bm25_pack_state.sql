-- What decides the next pack (store/bm25.py): postings as rows, packed postings of deleted
-- sentences, packed postings, and of them those in the recent tier.
SELECT s.pending_postings, s.stale_postings, s.packed_postings, s.recent_postings
FROM windowrag.bm25_stats s WHERE s.collection_id = %s
