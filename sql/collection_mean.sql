-- The centre a halfvec index of the collection is built on (migration 0022): the mean of its rows'
-- embeddings, as the text the index expression and windowrag.dense_search both write (NULL for an
-- empty collection or a binary index).
SELECT CASE WHEN c.vector_index = 'halfvec' THEN
    (SELECT avg(s.embedding::vector)::halfvec::text FROM windowrag.sentences s WHERE s.collection_id = c.id) END
FROM windowrag.collections c
WHERE c.id = %s
