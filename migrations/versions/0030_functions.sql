-- Frozen by migration 0030 (windowrag.candidate_sentences also returns each list item's lead-in
-- and each table row's header, so that a context starting inside a list or a table carries
-- them): what it replaced, as 0029 had it, with its comment. 0030's downgrade runs this; the
-- upgrades of 0029 and earlier run it after sql/functions.sql so that a database stopped there
-- has what it had. The result type differs, so the function is dropped first. Never edit.

DROP FUNCTION IF EXISTS windowrag.candidate_sentences(text, text, vector, integer, integer, text, text, integer,
    float8, float8, bigint[], integer, float8, float8);
CREATE OR REPLACE FUNCTION windowrag.candidate_sentences(
    collection text, query_text text, query_embedding vector,
    candidates integer DEFAULT 20, radius integer DEFAULT 6, mode text DEFAULT 'hybrid',
    clamp text DEFAULT 'section', rrf_k integer DEFAULT 60,
    dense_weight float8 DEFAULT 1.0, bm25_weight float8 DEFAULT 1.0,
    document_ids bigint[] DEFAULT NULL, ef_search integer DEFAULT 100,
    k1 float8 DEFAULT 1.2, b float8 DEFAULT 0.75)
RETURNS TABLE (
    document_id bigint, external_id text, title text, section_id bigint, section_path text[],
    ordinal integer, start_char integer, end_char integer, token_count integer, page integer,
    cosine float8, window_cosine float8, bm25 float8, matched_terms text[], matched_idf float8[],
    fused_rank integer, dense_rank integer, bm25_rank integer, rrf_score float8, query_idf float8, gap text,
    kind text)
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
    IF num_nulls(candidates, radius, mode, clamp, rrf_k, dense_weight, bm25_weight, ef_search, k1, b) > 0
            OR radius NOT BETWEEN 0 AND 1000 THEN
        PERFORM windowrag.check_not_null('candidate_sentences', jsonb_build_object(
            'candidates', candidates, 'radius', radius, 'mode', mode, 'clamp', clamp, 'rrf_k', rrf_k,
            'dense_weight', dense_weight, 'bm25_weight', bm25_weight, 'ef_search', ef_search, 'k1', k1, 'b', b));
        PERFORM windowrag.check_number('candidate_sentences', 'radius', radius, 0, 1000);  -- as PipelineOptions.radius
    END IF;
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
    -- Every lookup below is a LATERAL subquery with OFFSET 0: the planner cannot estimate how
    -- few rows the hits are (a function's 1,000-row default) and otherwise hash-joins whole
    -- tables (a sequential scan of the sentences: 60 ms of 65 at 100k sentences); the fence
    -- keeps each one an index probe per row.
    WITH hits AS (
        SELECT h.sentence_id, h.rank, h.dense_rank, h.bm25_rank, h.rrf_score, s.document_id, s.ordinal,
               CASE WHEN clamp = 'section' THEN s.first_sentence ELSE 0 END AS bound_lo,
               CASE WHEN clamp = 'section' THEN s.last_sentence ELSE s.sentence_count - 1 END AS bound_hi
        FROM windowrag.hybrid_search(collection, query_text, query_embedding, candidates, mode, rrf_k,
                                     dense_weight, bm25_weight, document_ids, ef_search, k1, b) h
        CROSS JOIN LATERAL (
            SELECT s.document_id, s.ordinal, sec.first_sentence, sec.last_sentence, d.sentence_count
            FROM windowrag.sentences s
            JOIN windowrag.sections sec ON sec.id = s.section_id
            JOIN windowrag.documents d ON d.id = s.document_id
            WHERE s.id = h.sentence_id
            OFFSET 0) s
        WHERE h.rank <= candidates
    ), around AS (
        -- each hit's neighbourhood: one range scan of (document_id, ordinal); overlaps counted once
        SELECT DISTINCT ON (s.id) s.*
        FROM hits h
        CROSS JOIN LATERAL (
            SELECT s.* FROM windowrag.sentences s
            WHERE s.document_id = h.document_id
              AND s.ordinal BETWEEN greatest(h.ordinal - radius, h.bound_lo) AND least(h.ordinal + radius, h.bound_hi)
            OFFSET 0) s
        ORDER BY s.id
    ), q AS MATERIALIZED (  -- the query terms once, not once per candidate sentence
        SELECT t.lexeme, ln(1 + (n_sentences - t.df + 0.5) / (t.df + 0.5)) AS idf
        FROM windowrag.bm25_terms t
        WHERE t.collection_id = cid AND t.lexeme = ANY (lexemes)
    )
    , cand AS (
        -- the sentence with the candidate rows before and after it in its section, as one mean
        -- vector: the sentence in context. Those are its neighbours except at the edge of a hit's
        -- neighbourhood, where the next candidate of the section can lie further on (the value
        -- model was fitted on this feature as it is computed here).
        -- (stored halfvecs read as vector: the mean and both cosines in single precision, with
        -- the query embedding as given)
        SELECT s.*, avg(s.embedding::vector) OVER (PARTITION BY s.document_id, s.section_id ORDER BY s.ordinal
                                          ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS window_embedding
        FROM around s
    )
    SELECT s.document_id, d.external_id, d.title, s.section_id, sec.heading_path,
           s.ordinal, s.start_char, s.end_char, s.token_count, s.page,
           CASE WHEN query_embedding IS NULL THEN NULL
                ELSE 1 - (s.embedding::vector <=> query_embedding)::float8 END,
           CASE WHEN query_embedding IS NULL THEN NULL
                ELSE 1 - (s.window_embedding <=> query_embedding)::float8 END,
           coalesce(m.score, 0), coalesce(m.terms, '{}'), coalesce(m.idfs, '{}'),
           h.rank, h.dense_rank, h.bm25_rank, h.rrf_score, total_idf,
           CASE WHEN s.ordinal < sec.last_sentence AND s.gap ~ '[^[:space:]]' THEN s.gap END,
           s.kind
    FROM cand s
    CROSS JOIN LATERAL (SELECT sec.heading_path, sec.last_sentence FROM windowrag.sections sec
                        WHERE sec.id = s.section_id OFFSET 0) sec
    CROSS JOIN LATERAL (SELECT d.external_id, d.title FROM windowrag.documents d WHERE d.id = s.document_id OFFSET 0) d
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

COMMENT ON FUNCTION windowrag.candidate_sentences(text, text, vector, integer, integer, text, text, integer,
    double precision, double precision, bigint[], integer, double precision, double precision) IS
'What the Python pipeline selects from: the fused hits and every sentence within radius of them in their section, each with its cosine, window cosine, BM25 score, matched query terms, ranks, the text up to the next sentence of its section when more than whitespace (gap), and its kind (sentence, heading, list_item, table_row, code, chunk).';
