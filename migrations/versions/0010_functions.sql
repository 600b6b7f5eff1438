-- Frozen by migration 0010 (halfvec): the two functions it replaces, as 0009 installed them
-- (embeddings stored as vector; HNSW on embedding::vector(dim)). 0010's downgrade re-installs
-- them, and 0009's upgrade lays them over sql/functions.sql so that a database stopped at 0009
-- has exactly what 0009 had. Never edit: the live definitions are in sql/functions.sql.

-- Cosine top-n through the collection's HNSW index (a partial expression index on
-- embedding::vector(dim), hence the dynamic SQL: the dimension must be a constant).
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
    filter_clause text := '';
BEGIN
    PERFORM windowrag.check_search_limits(n => n, ef_search => ef_search);
    IF n <= 0 THEN
        RETURN;
    END IF;
    SELECT c.dimension INTO dim FROM windowrag.collections c WHERE c.id = cid;
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
    RETURN QUERY EXECUTE format($q$
        SELECT x.id, x.distance, (row_number() OVER (ORDER BY x.distance, x.id))::integer
        FROM (
            SELECT s.id, (s.embedding::vector(%1$s) <=> $1::vector(%1$s))::float8 AS distance
            FROM windowrag.sentences s
            WHERE s.collection_id = %2$s %3$s
            ORDER BY s.embedding::vector(%1$s) <=> $1::vector(%1$s)
            LIMIT $3
        ) x
        ORDER BY x.distance, x.id $q$, dim, cid, filter_clause)
    USING query_embedding, document_ids, n;
END $$;


-- Every sentence that could be sent, with its own relevance signals: the neighbourhood
-- (± radius, clamped to the section or document) of each of the best `candidates` fused hits,
-- once each, in document order. Per sentence: its cosine similarity to the query (its own
-- embedding, hit or not), its BM25 score, the query lexemes it holds (with their idf), and its
-- fused/dense/BM25 ranks when it is a hit. Selection (which runs to send under a token budget)
-- happens in Python over these rows (windowrag_pg/segment/select.py).
CREATE OR REPLACE FUNCTION windowrag.candidate_sentences(
    collection text, query_text text, query_embedding vector,
    candidates integer DEFAULT 20, radius integer DEFAULT 5, mode text DEFAULT 'hybrid',
    clamp text DEFAULT 'section', rrf_k integer DEFAULT 60,
    dense_weight float8 DEFAULT 1.0, bm25_weight float8 DEFAULT 1.0,
    document_ids bigint[] DEFAULT NULL, ef_search integer DEFAULT 100,
    k1 float8 DEFAULT 1.2, b float8 DEFAULT 0.75)
RETURNS TABLE (
    document_id bigint, external_id text, title text, section_id bigint, section_path text[],
    ordinal integer, start_char integer, end_char integer, token_count integer, page integer,
    cosine float8, window_cosine float8, bm25 float8, matched_terms text[], matched_idf float8[],
    fused_rank integer, dense_rank integer, bm25_rank integer, rrf_score float8, query_idf float8)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    cid integer := windowrag.collection_id(collection);
    config regconfig;
    lexemes text[];
    n_sentences float8;
    avg_length float8;
    total_idf float8;
BEGIN
    PERFORM windowrag.check_search_limits(collection => collection, query_text => query_text, candidates => candidates, ef_search => ef_search, rrf_k => rrf_k);
    IF clamp NOT IN ('section', 'document') THEN
        RAISE EXCEPTION 'windowrag: clamp must be section or document, not %', quote_literal(clamp)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF candidates <= 0 OR radius < 0 THEN
        RAISE EXCEPTION 'windowrag: candidates must be positive and radius non-negative (got %, %)', candidates, radius
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT c.ts_config INTO config FROM windowrag.collections c WHERE c.id = cid;
    lexemes := windowrag.query_lexemes(config, query_text);
    SELECT s.n_sentences, greatest(s.total_length::float8 / nullif(s.n_sentences, 0), 1.0)
      INTO n_sentences, avg_length
      FROM windowrag.bm25_stats s WHERE s.collection_id = cid;
    -- the idf mass of the whole query; a lexeme the collection never holds counts as the rarest
    -- (the share of it that a sentence matches says how well the corpus can answer at all)
    SELECT sum(ln(1 + (n_sentences - coalesce(t.df, 0) + 0.5) / (coalesce(t.df, 0) + 0.5)))
      INTO total_idf
      FROM unnest(lexemes) l LEFT JOIN windowrag.bm25_terms t ON t.collection_id = cid AND t.lexeme = l;
    RETURN QUERY
    WITH hits AS (
        SELECT h.sentence_id, h.rank, h.dense_rank, h.bm25_rank, h.rrf_score, s.document_id, s.ordinal,
               CASE WHEN clamp = 'section' THEN sec.first_sentence ELSE 0 END AS bound_lo,
               CASE WHEN clamp = 'section' THEN sec.last_sentence ELSE d.sentence_count - 1 END AS bound_hi
        FROM windowrag.hybrid_search(collection, query_text, query_embedding, candidates, mode, rrf_k,
                                     dense_weight, bm25_weight, document_ids, ef_search, k1, b) h
        JOIN windowrag.sentences s ON s.id = h.sentence_id
        JOIN windowrag.sections sec ON sec.id = s.section_id
        JOIN windowrag.documents d ON d.id = s.document_id
        WHERE h.rank <= candidates
    ), around AS (
        SELECT DISTINCT h.document_id, o AS ordinal
        FROM hits h, generate_series(greatest(h.ordinal - radius, h.bound_lo),
                                     least(h.ordinal + radius, h.bound_hi)) o
    ), q AS (
        SELECT t.lexeme, ln(1 + (n_sentences - t.df + 0.5) / (t.df + 0.5)) AS idf
        FROM windowrag.bm25_terms t
        WHERE t.collection_id = cid AND t.lexeme = ANY (lexemes)
    )
    , cand AS (
        -- the sentence with its two neighbours, as one mean vector: the sentence in context
        SELECT s.*, avg(s.embedding) OVER (PARTITION BY s.document_id, s.section_id ORDER BY s.ordinal
                                          ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS window_embedding
        FROM around a
        JOIN windowrag.sentences s ON s.document_id = a.document_id AND s.ordinal = a.ordinal
    )
    SELECT s.document_id, d.external_id, d.title, s.section_id, sec.heading_path,
           s.ordinal, s.start_char, s.end_char, s.token_count, s.page,
           CASE WHEN query_embedding IS NULL THEN NULL
                ELSE 1 - (s.embedding <=> query_embedding)::float8 END,
           CASE WHEN query_embedding IS NULL THEN NULL
                ELSE 1 - (s.window_embedding <=> query_embedding)::float8 END,
           coalesce(m.score, 0), coalesce(m.terms, '{}'), coalesce(m.idfs, '{}'),
           h.rank, h.dense_rank, h.bm25_rank, h.rrf_score, total_idf
    FROM cand s
    JOIN windowrag.sections sec ON sec.id = s.section_id
    JOIN windowrag.documents d ON d.id = s.document_id
    LEFT JOIN hits h ON h.sentence_id = s.id
    LEFT JOIN LATERAL (
        SELECT round(sum(q.idf * windowrag.bm25_term_weight(cardinality(u.positions), s.bm25_length,
                                                            avg_length, k1, b))::numeric, 9)::float8 AS score,
               array_agg(q.lexeme ORDER BY q.lexeme) AS terms,
               array_agg(q.idf ORDER BY q.lexeme) AS idfs
        FROM unnest(s.tsv) u JOIN q ON q.lexeme = u.lexeme
    ) m ON true
    ORDER BY s.document_id, s.ordinal;
END $$;
