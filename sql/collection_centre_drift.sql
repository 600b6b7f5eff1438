-- How far the centre of a collection's vector index (migration 0022) is from the mean of its rows
-- now, relative to that mean's norm (NULL: not centred, or no rows). Rows written since the index
-- was built move the mean; doctor advises a new centre past a threshold.
SELECT l2_distance(m.mean, c.vector_centre::vector) / nullif(vector_norm(m.mean), 0)
FROM windowrag.collections c,
     LATERAL (SELECT avg(s.embedding::vector) AS mean FROM windowrag.sentences s WHERE s.collection_id = c.id) m
WHERE c.id = %s
