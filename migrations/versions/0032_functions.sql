-- Frozen by migration 0032 (hybrid_search and search_windows take a NULL query_text in mode
-- dense; check_search_limits names window_size, the SQL argument; setup_tenancy_roles keeps
-- EXECUTE on the owner-only functions from PUBLIC and the group roles): what it replaced, as 0031
-- had it (comments unchanged). 0032's downgrade runs this; the upgrades of 0031 and earlier run it
-- after sql/functions.sql so that a database stopped there has what it had. check_search_limits
-- is sql/limits.sql's (installed by 0009, which runs this after it). Never edit.

CREATE OR REPLACE FUNCTION windowrag.hybrid_search(
    collection text, query_text text, query_embedding vector,
    n integer DEFAULT 50, mode text DEFAULT 'hybrid', rrf_k integer DEFAULT 60,
    dense_weight float8 DEFAULT 1.0, bm25_weight float8 DEFAULT 1.0,
    document_ids bigint[] DEFAULT NULL, ef_search integer DEFAULT 100,
    k1 float8 DEFAULT 1.2, b float8 DEFAULT 0.75)
RETURNS TABLE (sentence_id bigint, dense_rank integer, bm25_rank integer, rrf_score float8, rank integer)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    IF num_nulls(collection, n, mode, rrf_k, dense_weight, bm25_weight, ef_search, k1, b) > 0
            OR NOT (dense_weight >= 0 AND dense_weight < 'Infinity' AND bm25_weight >= 0 AND bm25_weight < 'Infinity') THEN
        PERFORM windowrag.check_not_null('hybrid_search', jsonb_build_object(
            'collection', collection, 'n', n, 'mode', mode, 'rrf_k', rrf_k, 'dense_weight', dense_weight,
            'bm25_weight', bm25_weight, 'ef_search', ef_search, 'k1', k1, 'b', b));
        PERFORM windowrag.check_number('hybrid_search', 'dense_weight', dense_weight, 0);
        PERFORM windowrag.check_number('hybrid_search', 'bm25_weight', bm25_weight, 0);
    END IF;
    PERFORM windowrag.check_search_limits(query_text => query_text, n => n, ef_search => ef_search, rrf_k => rrf_k);
    IF mode NOT IN ('hybrid', 'dense', 'bm25') THEN
        RAISE EXCEPTION 'windowrag: mode must be hybrid, dense or bm25, not %', quote_literal(mode)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    WITH dense AS (
        SELECT d.sentence_id, d.rank FROM windowrag.dense_search(
            collection, query_embedding, CASE WHEN mode = 'bm25' THEN 0 ELSE n END, document_ids, ef_search) d
    ), sparse AS (
        SELECT s.sentence_id, s.rank FROM windowrag.bm25_search(
            collection, query_text, CASE WHEN mode = 'dense' THEN 0 ELSE n END, document_ids, k1, b) s
    ), fused AS (
        SELECT coalesce(dense.sentence_id, sparse.sentence_id) AS sentence_id,
               dense.rank AS dense_rank, sparse.rank AS bm25_rank,
               coalesce(dense_weight / (rrf_k + dense.rank), 0)
                 + coalesce(bm25_weight / (rrf_k + sparse.rank), 0) AS rrf_score
        FROM dense FULL JOIN sparse ON sparse.sentence_id = dense.sentence_id
    )
    SELECT f.sentence_id, f.dense_rank, f.bm25_rank, f.rrf_score,
           (row_number() OVER (ORDER BY f.rrf_score DESC, f.sentence_id))::integer
    FROM fused f
    ORDER BY f.rrf_score DESC, f.sentence_id;
END $$;

-- sql/limits.sql as 0009 to 0031 had it
CREATE OR REPLACE FUNCTION windowrag.check_search_limits(
    collection text DEFAULT NULL, query_text text DEFAULT NULL, k integer DEFAULT NULL,
    n integer DEFAULT NULL, window_size integer DEFAULT NULL, candidates integer DEFAULT NULL,
    ef_search integer DEFAULT NULL, max_sentences integer DEFAULT NULL, rrf_k integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    lim record;
    value bigint;
BEGIN
    FOR lim IN SELECT * FROM windowrag.search_limits() LOOP
        value := CASE lim.name
            WHEN 'k' THEN k
            WHEN 'candidates' THEN coalesce(candidates, nullif(n, 0))
            WHEN 'ef_search' THEN ef_search
            WHEN 'rrf_k' THEN rrf_k
            WHEN 'window' THEN window_size
            WHEN 'max_sentences' THEN max_sentences
            WHEN 'query_chars' THEN length(query_text)
            WHEN 'collection_name' THEN length(collection)
        END;
        IF value IS NOT NULL AND (value < lim.low OR value > lim.high)
           AND NOT (lim.name = 'query_chars' AND value = 0) THEN  -- an empty query finds nothing
            RAISE EXCEPTION 'windowrag: % must be %from % to %, not % (limit %: %)',
                lim.what, CASE WHEN lim.what = lim.name THEN 'an integer ' ELSE '' END,
                lim.low, lim.high, value, lim.name, lim.why
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
END $$;

-- sql/tenant_ids.sql's, as 0007 to 0031 had it
CREATE OR REPLACE FUNCTION windowrag.setup_tenancy_roles() RETURNS void
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM windowrag.setup_tenancy_roles_0003();
    IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'windowrag_writer') THEN
        REVOKE INSERT ON windowrag.collections FROM windowrag_writer;
        REVOKE USAGE ON SEQUENCE windowrag.collections_id_seq FROM windowrag_writer;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'windowrag_reader') THEN
        -- granted with ALL FUNCTIONS by the 0003 body, which knows only its own name
        REVOKE EXECUTE ON FUNCTION windowrag.setup_tenancy_roles_0003() FROM windowrag_reader;
    END IF;
END $$;
REVOKE EXECUTE ON FUNCTION windowrag.setup_tenancy_roles() FROM PUBLIC;

-- 0032 added these; 0031 had no such functions
DROP FUNCTION IF EXISTS windowrag.revoke_owner_only_functions();
DROP FUNCTION IF EXISTS windowrag.owner_only_functions();
