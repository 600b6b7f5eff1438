-- doctor --recall: what the library's dense leg returns (the collection's HNSW index)
SELECT sentence_id FROM windowrag.dense_search(%s, %s, %s, NULL, %s) ORDER BY rank
