-- doctor --recall: the exact nearest sentences by cosine over the stored vectors; run with
-- index scans off (recall_exact_scan_local) so that no index answers it
SELECT id FROM windowrag.sentences WHERE collection_id = %s ORDER BY embedding <=> %s::halfvec, id LIMIT %s
