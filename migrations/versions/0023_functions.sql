-- Frozen by migration 0023 (a binary index on three levels a dimension): what it replaced,
-- dense_search as 0022 had it. 0023's downgrade runs this (after rebuilding every three-level
-- index as 0022 built it); the upgrades of 0022 and earlier run it after sql/functions.sql so
-- that a database stopped there has what it had. Never edit.

-- Cosine top-n through the collection's HNSW index (a partial expression index on
-- embedding::halfvec(dim), hence the dynamic SQL: the dimension must be a constant). The query
-- embedding comes as a vector (psql users write vector literals) and is cast to halfvec(dim)
-- here, as the index expression needs; distances are those of the two halfvecs.
-- A collection with vector_index 'binary' (migration 0012) has its index on the sign bits
-- (binary_quantize(embedding)::bit(dim)): the greatest(ef_search, n) nearest by Hamming distance
-- are read through it and re-ranked by the cosine of the stored halfvecs.
-- An index built with a centre (collections.vector_centre, migration 0022: the mean of the rows
-- it was built on) is on embedding - centre (a binary one on its bits): BGE-like embeddings share one large
-- component (a mean of norm ~0.7), which crowds every vector into a narrow cone where the HNSW
-- graph finds the nearest poorly; without it the graph is far better at the same ef_search
-- (docs/performance.md). Cosines of centred vectors rank differently, so the greatest(ef_search,
-- n) nearest are read through the index and re-ranked by the cosine of the stored halfvecs, as
-- for 'binary'. The centre is written into the index expression as a literal: the query repeats
-- the same literal, read from collections, for the planner to match the index.
-- With a document filter, pgvector 0.8's iterative scan keeps reading the index until n
-- matching rows are found (relaxed order, re-sorted here).
CREATE OR REPLACE FUNCTION windowrag.dense_search(
    collection text, query_embedding vector, n integer DEFAULT 50,
    document_ids bigint[] DEFAULT NULL, ef_search integer DEFAULT 100)
RETURNS TABLE (sentence_id bigint, distance float8, rank integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    cid integer := windowrag.collection_id(collection);
    dim integer;
    index_kind text;
    centre text;
    pool_order text;
    filter_clause text := '';
BEGIN
    PERFORM windowrag.check_search_limits(n => n, ef_search => ef_search);
    IF n <= 0 THEN
        RETURN;
    END IF;
    SELECT c.dimension, c.vector_index, c.vector_centre::text INTO dim, index_kind, centre
    FROM windowrag.collections c WHERE c.id = cid;
    IF query_embedding IS NULL OR vector_dims(query_embedding) <> dim THEN
        RAISE EXCEPTION 'windowrag: query embedding has % dimensions, collection % has %',
            coalesce(vector_dims(query_embedding)::text, 'no'), quote_literal(collection), dim
            USING ERRCODE = 'data_exception';
    END IF;
    PERFORM set_config('hnsw.ef_search', greatest(ef_search, n)::text, true);
    IF document_ids IS NOT NULL THEN
        PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
        filter_clause := 'AND s.document_id = ANY ($2)';
    END IF;
    IF index_kind = 'binary' OR centre IS NOT NULL THEN
        -- the pool: the nearest by the index's own distance (Hamming, or centred cosine)
        pool_order := CASE
            WHEN index_kind = 'binary' AND centre IS NULL
            THEN format('binary_quantize(s.embedding)::bit(%1$s) <~> binary_quantize($1::halfvec(%1$s))::bit(%1$s)', dim)
            WHEN index_kind = 'binary'
            THEN format('binary_quantize(((s.embedding::halfvec(%1$s) - %2$L::halfvec(%1$s))::halfvec(%1$s)))::bit(%1$s)'
                        ' <~> binary_quantize(($1::halfvec(%1$s) - %2$L::halfvec(%1$s)))::bit(%1$s)', dim, centre)
            ELSE format('((s.embedding::halfvec(%1$s) - %2$L::halfvec(%1$s))::halfvec(%1$s))'
                        ' <=> ($1::halfvec(%1$s) - %2$L::halfvec(%1$s))', dim, centre) END;
        RETURN QUERY EXECUTE format($q$
            SELECT x.id, x.distance, (row_number() OVER (ORDER BY x.distance, x.id))::integer
            FROM (
                SELECT c.id, (c.embedding::halfvec(%1$s) <=> $1::halfvec(%1$s))::float8 AS distance
                FROM (
                    SELECT s.id, s.embedding
                    FROM windowrag.sentences s
                    WHERE s.collection_id = %2$s %3$s
                    ORDER BY %4$s
                    LIMIT greatest($4, $3)
                ) c
                ORDER BY 2, 1
                LIMIT $3
            ) x
            ORDER BY x.distance, x.id $q$, dim, cid, filter_clause, pool_order)
        USING query_embedding, document_ids, n, ef_search;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format($q$
        SELECT x.id, x.distance, (row_number() OVER (ORDER BY x.distance, x.id))::integer
        FROM (
            SELECT s.id, (s.embedding::halfvec(%1$s) <=> $1::halfvec(%1$s))::float8 AS distance
            FROM windowrag.sentences s
            WHERE s.collection_id = %2$s %3$s
            ORDER BY s.embedding::halfvec(%1$s) <=> $1::halfvec(%1$s)
            LIMIT $3
        ) x
        ORDER BY x.distance, x.id $q$, dim, cid, filter_clause)
    USING query_embedding, document_ids, n;
END $$;
