-- The limits of the search functions: the same numbers and words as windowrag_pg/limits.py
-- (tests/test_limits.py compares windowrag.search_limits() with it). Installed by migration
-- 0009; each retrieval function calls windowrag.check_search_limits(...) on its first line, so
-- psql callers get the message the Python API gives, naming the limit, instead of a pgvector
-- error or "stack depth limit exceeded".
CREATE OR REPLACE FUNCTION windowrag.search_limits()
RETURNS TABLE (name text, low integer, high integer, what text, why text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    VALUES
        ('k', 1, 1000, 'k', 'contexts returned'),
        ('candidates', 1, 1000, 'candidates',
         'sentences per list (dense, BM25) before fusion; pgvector''s hnsw.ef_search tops out at 1000'),
        ('ef_search', 1, 1000, 'ef_search', 'pgvector''s hnsw.ef_search tops out at 1000'),
        ('rrf_k', 1, 10000, 'rrf_k', 'the Reciprocal Rank Fusion constant'),
        ('window', 0, 100, 'window', 'sentences each side of a hit: 100 already sends 201 sentences a hit'),
        ('max_sentences', 1, 10000, 'max_sentences', 'sentences the retrieved windows hold together'),
        ('query_chars', 1, 20000, 'the query''s length in characters',
         'longer queries overflow the server''s stack in full-text matching'),
        ('collection_name', 1, 200, 'a collection name''s length in characters', 'the collections table''s CHECK')
$$;

-- Raise invalid_parameter_value naming the first limit a value breaks and the argument it is
-- (0032: window_size, not the limit's Python name window); NULL arguments are not
-- checked. n: the list length of bm25_search/dense_search, where 0 means "no list" (hybrid
-- search asks for 0 in single-list modes), checked against the candidates limit.
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
            -- named as the SQL argument is: the window limit is window_size here (migration 0032;
            -- `window` in Python and the CLI, which is what the limit is called)
            RAISE EXCEPTION 'windowrag: % must be %from % to %, not % (limit %: %)',
                CASE lim.name WHEN 'window' THEN 'window_size' ELSE lim.what END,
                CASE WHEN lim.what = lim.name THEN 'an integer ' ELSE '' END,
                lim.low, lim.high, value, lim.name, lim.why
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
END $$;
