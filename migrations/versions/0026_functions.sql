-- Frozen by migration 0026 (dense_search names a NULL query embedding): what it replaced,
-- dense_search as 0024 had it. 0026's downgrade runs this; the upgrades of 0025 and earlier
-- run it after sql/functions.sql so that a database stopped there has what it had.
-- Never edit.

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
-- for 'binary'. The centre is written into the index expression as a literal; the query passes
-- it (and the spread) as parameters ($5, $6), which the one-shot plan of EXECUTE folds into the
-- same constants, so the planner matches the index without parsing ~3 KB of literal text per
-- vector in each query (migration 0024: dense_search p50 -16% on a centred halfvec index, -22%
-- on a three-level binary one, at 100k; docs/performance.md).
-- A binary index built with a spread too (collections.vector_spread, migration 0023: 0.9 of the
-- rows' standard deviation in each dimension) has three bits a dimension: whether the centred
-- value is above -spread, 0 and +spread (a thermometer code, whose Hamming distance is the L1
-- distance of the values quantised to four levels). One sign bit loses the magnitudes: the
-- Hamming-nearest 100 held 0.965 of the exact top 5 on 105k real sentences, three levels 0.997;
-- through the graph at ef_search 100, 0.936 and 0.989-0.994 (docs/performance.md).
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
    centre halfvec;
    spread halfvec;
    row_key text;
    query_key text;
    pool_order text;
    filter_clause text := '';
BEGIN
    PERFORM windowrag.check_search_limits(n => n, ef_search => ef_search);
    IF n <= 0 THEN
        RETURN;
    END IF;
    SELECT c.dimension, c.vector_index, c.vector_centre, c.vector_spread
    INTO dim, index_kind, centre, spread
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
        -- the pool: the nearest by the index's own distance (Hamming, or centred cosine); the
        -- row side written exactly as store.collections.index_key writes the index expression
        row_key := CASE WHEN centre IS NULL THEN 's.embedding'
            ELSE format('((s.embedding::halfvec(%1$s) - $5::halfvec(%1$s))::halfvec(%1$s))', dim) END;
        query_key := CASE WHEN centre IS NULL THEN format('$1::halfvec(%s)', dim)
            ELSE format('(($1::halfvec(%1$s) - $5::halfvec(%1$s))::halfvec(%1$s))', dim) END;
        pool_order := CASE
            WHEN index_kind = 'binary' AND spread IS NOT NULL
            THEN format(
                '(binary_quantize((%2$s - $6::halfvec(%1$s))::halfvec(%1$s))::bit(%1$s)'
                ' || binary_quantize(%2$s)::bit(%1$s)'
                ' || binary_quantize((%2$s + $6::halfvec(%1$s))::halfvec(%1$s))::bit(%1$s))::bit(%4$s)'
                ' <~> (binary_quantize((%3$s - $6::halfvec(%1$s))::halfvec(%1$s))::bit(%1$s)'
                ' || binary_quantize(%3$s)::bit(%1$s)'
                ' || binary_quantize((%3$s + $6::halfvec(%1$s))::halfvec(%1$s))::bit(%1$s))::bit(%4$s)',
                dim, row_key, query_key, 3 * dim)
            WHEN index_kind = 'binary'
            THEN format('binary_quantize(%2$s)::bit(%1$s) <~> binary_quantize(%3$s)::bit(%1$s)', dim, row_key, query_key)
            ELSE format('%s <=> %s', row_key, query_key) END;
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
        USING query_embedding, document_ids, n, ef_search, centre, spread;
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
