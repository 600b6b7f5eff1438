-- The centre of a collection's halfvec index (migration 0022), set whenever the index is built:
-- the mean of the rows' embeddings (NULL for an empty collection or a binary index), returned as
-- the text the index expression and windowrag.dense_search both write.
UPDATE windowrag.collections c
SET vector_centre = CASE WHEN c.vector_index = 'halfvec' THEN
    (SELECT avg(s.embedding::vector)::halfvec FROM windowrag.sentences s WHERE s.collection_id = c.id) END
WHERE c.id = %s
RETURNING c.vector_centre::text
