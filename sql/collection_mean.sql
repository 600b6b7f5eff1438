-- The centre a vector index of the collection is built on (migration 0022): the mean of its rows'
-- embeddings, as the text the index expression and windowrag.dense_search both write (NULL for an
-- empty collection).
SELECT avg(s.embedding::vector)::halfvec::text FROM windowrag.sentences s WHERE s.collection_id = %s
