-- The statistics a vector index of the collection is built on, as the text the index expression
-- and windowrag.dense_search both write (NULLs for an empty collection): the mean of its rows'
-- embeddings (the centre, migration 0022) and, when %(spread)s is given (a binary index,
-- migration 0023), %(spread)s times their standard deviation in each dimension (the offset of
-- the index's outer thresholds). One pass: the variance as E[x²] − E[x]² (pgvector's avg sums in
-- double precision).
WITH moments AS (
    SELECT avg(s.embedding::vector) AS mean, avg(s.embedding::vector * s.embedding::vector) AS square
    FROM windowrag.sentences s
    WHERE s.collection_id = %(collection_id)s
)
SELECT m.mean::halfvec::text,
       CASE WHEN m.mean IS NOT NULL AND %(spread)s::float8 IS NOT NULL THEN (
           SELECT array_agg((%(spread)s::float8 * sqrt(greatest(u.square - u.mean * u.mean, 0)))::real ORDER BY u.i)::halfvec::text
           FROM unnest(m.square::real[], m.mean::real[]) WITH ORDINALITY u(square, mean, i)) END
FROM moments m
