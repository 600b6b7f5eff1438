SELECT coalesce((SELECT n_sentences FROM windowrag.bm25_stats WHERE collection_id = %s), 0)
