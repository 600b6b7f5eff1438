-- Retrieval functions, callable from psql and used by the Python API (one implementation).
-- The live definitions, installed by the newest migration that re-applies this file (0010:
-- embeddings stored as halfvec, so dense_search and candidate_sentences cast to halfvec(dim) /
-- vector; 0009 added the limit checks of sql/limits.sql on each function's first line).
-- Migrations replay history, so a change here needs a new migration that re-applies this file,
-- and a frozen copy of the functions it replaces, as they were before, beside it
-- (migrations/versions/NNNN_functions.sql) for its downgrade (0010_functions.sql: the vector
-- versions; 0009's upgrade lays it over this file to install what 0009 had).
--
--   windowrag.bm25_search(collection, query_text, n)                 true Okapi BM25 over sentences
--   windowrag.dense_search(collection, query_embedding, n)           cosine top-n through HNSW
--   windowrag.hybrid_search(collection, query_text, query_embedding) RRF fusion of both
--   windowrag.search_windows(collection, query_text, query_embedding, k, window_size)
--                                                                    merged, clamped windows
--   windowrag.sentence_window(sentence_id, window_size)              the window of one sentence
--   windowrag.candidate_sentences(collection, query_text, query_embedding)
--                                  every sentence near the fused hits, with its own signals
--   windowrag.bm25_rebuild(collection_id)                            recount BM25, pack postings

CREATE OR REPLACE FUNCTION windowrag.collection_id(collection text) RETURNS integer
LANGUAGE plpgsql STABLE AS $$
DECLARE
    found integer;
BEGIN
    IF collection IS NULL THEN  -- (migration 0027; "collection <NULL> does not exist" before)
        RAISE EXCEPTION 'windowrag: collection is NULL: name a collection (`windowrag stats` lists them)'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT c.id INTO found FROM windowrag.collections c WHERE c.name = collection;
    IF found IS NULL THEN
        RAISE EXCEPTION 'windowrag: collection % does not exist', quote_literal(collection)
            USING ERRCODE = 'undefined_object';
    END IF;
    RETURN found;
END $$;

-- Distinct lexemes of a query under the collection's text search configuration, read in the
-- composed (NFC) form as the sentences' tsvectors are (sql/insert_staged_sentences.sql, migration
-- 0031): "é" typed as e + a combining accent and "é" are one word. A NULL query text is refused
-- (0031): bm25_search and candidate_sentences, which read the query's words through this,
-- returned nothing or dense hits alone for it, without a word.
CREATE OR REPLACE FUNCTION windowrag.query_lexemes(config regconfig, query_text text) RETURNS text[]
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    IF query_text IS NULL THEN
        RAISE EXCEPTION 'windowrag: query_text must not be NULL: BM25 and the sentence values read the query''s words (pass its text)'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF current_setting('server_encoding') = 'UTF8' THEN  -- (normalize needs a UTF8 server)
        query_text := normalize(query_text, NFC);
    END IF;
    RETURN (SELECT coalesce(array_agg(DISTINCT l ORDER BY l), '{}')
            FROM unnest(tsvector_to_array(to_tsvector(config, query_text))) l);
END $$;

-- Okapi BM25: score(s) = Σ_t idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|s|/avgdl)),
-- idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))   (the non-negative form used by Lucene).
-- Query terms are OR-ed and counted once. Scores are rounded to 1e-9: a float sum depends on
-- the order of its terms (which the plan decides), and equal scores must compare equal so that
-- the tie-break (sentence id) makes the ranking deterministic.
-- Without a document filter (top-k over the whole collection) each posting carries its tf and
-- sentence length (migration 0013), so every posting read adds its exact part of a score.
-- A query term with at most per_term_limit postings is read whole; when every query term is
-- (or reading the longer lists whole costs less than cutting them and re-scoring), and no packed
-- posting belongs to a deleted sentence, the sums are the exact scores of every matching
-- sentence and the top n is returned from them. Otherwise a longer list is cut to its
-- strongest postings (impact order; in proportion to the term's idf; the cut shared between its
-- packed blocks and its rows written since the last pack in proportion to how many each holds,
-- bm25_terms.packed_df, migration 0020; the blocks of the recent tier, recent_df, are a third
-- part, migration 0021), the sums are lower bounds,
-- and the shortlist_size best candidates (default max(4·n, 200)) are scored exactly from their
-- tsvectors. Returned scores are always exact; the ranking can differ from scoring every
-- matching sentence only when a list was cut (docs/performance.md measures it: agreement with
-- exhaustive scoring, and what it costs the hybrid ranking).
-- With a filter, every matching sentence of those documents is scored exactly (GIN).
-- With the optional windowrag_native extension (sql/native, migration 0016) the postings are
-- weighed and summed in C, ~10x cheaper a posting than as SQL rows, and a cut list's shortlist
-- is re-scored in C from the tsvectors: the same scores; whole lists are read more often
-- instead of re-scoring (the ranking is then exact).
-- plan_cache_mode: generic plans; custom plans re-planned its statements on every call (-0.86 ms
-- p50 a direct call at 100k; within search_windows, which sets it, no change).
CREATE OR REPLACE FUNCTION windowrag.bm25_search(
    collection text, query_text text, n integer DEFAULT 50,
    document_ids bigint[] DEFAULT NULL,
    k1 float8 DEFAULT 1.2, b float8 DEFAULT 0.75, per_term_limit integer DEFAULT 2000,
    shortlist_size integer DEFAULT NULL)
RETURNS TABLE (sentence_id bigint, score float8, rank integer)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    cid integer := windowrag.collection_id(collection);
    config regconfig;
    lexemes text[];
    n_sentences float8;
    avg_length float8;
    stale bigint;
    term_lexemes text[];
    term_idfs float8[];
    term_lengths bigint[];
    term_recent_lengths bigint[];
    term_row_lengths bigint[];
    exact_sums boolean;
    whole_postings bigint;
    cut_postings bigint;
    shortlist_length integer;
    shortlist_ids bigint[];
    shortlist_sums float8[];
    native boolean := to_regtype('windowrag_native.bm25_sums') IS NOT NULL;
    -- re-scoring one shortlisted candidate (a row fetch and its tsvector) costs about as much
    -- as reading, weighing and summing this many postings: 12 in SQL (docs/performance.md, 0013
    -- section), ~100 in C (0016)
    rescore_cost integer := CASE WHEN native THEN 100 ELSE 12 END;
BEGIN
    -- the argument checks (migration 0027) run only when one would fail: inline comparisons cost
    -- ~nothing, the calls ~0.1 ms a search in all (NaN compares above every number in Postgres)
    IF num_nulls(n, k1, b, per_term_limit) > 0 OR NOT (n BETWEEN 0 AND 1000 AND k1 >= 0 AND k1 < 'Infinity'
            AND b BETWEEN 0 AND 1 AND per_term_limit >= 1 AND coalesce(shortlist_size, 1) >= 1) THEN
        PERFORM windowrag.check_not_null('bm25_search', jsonb_build_object('n', n, 'k1', k1, 'b', b, 'per_term_limit', per_term_limit));
        PERFORM windowrag.check_number('bm25_search', 'n', n, 0, 1000);  -- 0: no list (hybrid_search's single-list modes)
        PERFORM windowrag.check_number('bm25_search', 'k1', k1, 0);
        PERFORM windowrag.check_number('bm25_search', 'b', b, 0, 1);
        PERFORM windowrag.check_number('bm25_search', 'per_term_limit', per_term_limit, 1);
        PERFORM windowrag.check_number('bm25_search', 'shortlist_size', shortlist_size, 1);  -- NULL: max(4 n, 200)
    END IF;
    PERFORM windowrag.check_search_limits(collection => collection, query_text => query_text, n => n);
    SELECT c.ts_config INTO config FROM windowrag.collections c WHERE c.id = cid;
    lexemes := windowrag.query_lexemes(config, query_text);
    SELECT s.n_sentences, s.total_length::float8 / nullif(s.n_sentences, 0), s.stale_postings
      INTO n_sentences, avg_length, stale
      FROM windowrag.bm25_stats s WHERE s.collection_id = cid;
    IF cardinality(lexemes) = 0 OR coalesce(n_sentences, 0) = 0 OR n <= 0 THEN
        RETURN;
    END IF;
    IF document_ids IS NULL THEN
        -- Each query term with its idf and the length its list is cut to: NULL (read whole) for a
        -- term with at most per_term_limit postings (packed lists may also hold postings of
        -- deleted sentences); a longer list is cut at a length that follows the term's share of
        -- the score: per_term_limit for the rarest query term, half as many at half its idf, never
        -- below n (n matching sentences give n results). A cut list's length is shared between its
        -- packed blocks and its posting rows in proportion to their postings (each part at least
        -- n when it holds that many), as one packed list of the same length would be read. Reading
        -- the full length from both read up to twice the postings, half of them as rows: at 1M
        -- sentences with 20% of the postings as rows, +1.38 ms p50 on this function against +0.55
        -- since (migration 0020; benchmarks/pending_postings.py).
        SELECT array_agg(c.lexeme), array_agg(c.idf),
               array_agg(CASE WHEN c.df <= per_term_limit THEN NULL
                              ELSE least(c.packed - c.recent, greatest(ceil(c.cut_length * (c.packed - c.recent)::float8 / c.df)::bigint, n)) END),
               array_agg(CASE WHEN c.df <= per_term_limit THEN NULL
                              ELSE least(c.recent, greatest(ceil(c.cut_length * c.recent::float8 / c.df)::bigint, n)) END),
               array_agg(CASE WHEN c.df <= per_term_limit THEN NULL
                              ELSE least(c.df - c.packed, greatest(ceil(c.cut_length * (c.df - c.packed)::float8 / c.df)::bigint, n)) END),
               sum(c.df), sum(CASE WHEN c.df <= per_term_limit THEN c.df ELSE c.cut_length END)
          INTO term_lexemes, term_idfs, term_lengths, term_recent_lengths, term_row_lengths, whole_postings, cut_postings
        FROM (SELECT t.lexeme, t.df, t.idf, least(t.packed_df, t.df)::bigint AS packed,
                     least(t.recent_df, t.packed_df, t.df)::bigint AS recent,
                     greatest(n, ceil(per_term_limit * t.idf / max(t.idf) OVER ()))::bigint AS cut_length
              FROM (SELECT t.lexeme, t.df, t.packed_df, t.recent_df, ln(1 + (n_sentences - t.df + 0.5) / (t.df + 0.5)) AS idf
                    FROM windowrag.bm25_terms t
                    WHERE t.collection_id = cid AND t.lexeme = ANY (lexemes)) t) c;
        IF term_lexemes IS NULL THEN
            RETURN;
        END IF;
        -- Every list is read whole, and phase 1 is the exact answer, when none holds a deleted
        -- sentence and reading the long lists whole costs no more than cutting them and
        -- re-scoring the shortlist (so always when every list is within per_term_limit).
        exact_sums := stale = 0
            AND whole_postings <= cut_postings + rescore_cost * coalesce(shortlist_size, greatest(4 * n, 200));
        -- exact sums need no re-scoring, only rounding (float8 -> numeric, ~1 µs each): the top
        -- n and a margin for sums that tie with the n-th once rounded
        shortlist_length := CASE WHEN exact_sums THEN n + 16
                                 ELSE coalesce(shortlist_size, greatest(4 * n, 200)) END;
        IF exact_sums THEN
            -- every list whole (unnest pads a NULL array with NULLs: no LIMIT)
            term_lengths := NULL;
            term_recent_lengths := NULL;
            term_row_lengths := NULL;
        END IF;
        -- phase 1: each term's strongest postings (all of them when exact_sums), each with its
        -- exact part of the score, read from the term's packed blocks (impact order: block 0
        -- holds the strongest) and from the postings written since the last pack, summed per
        -- sentence: its exact score when exact_sums, otherwise a lower bound (the parts of cut
        -- lists not read are missing). The best shortlist_length sums go on to phase 2.
        IF native THEN
            -- The optional C extension (sql/native) weighs and sums whole blocks: the same
            -- postings and formula, without an executor row per posting (~0.7 µs each).
            SELECT (r.sums).sentence_ids, (r.sums).sums INTO shortlist_ids, shortlist_sums
            FROM (SELECT windowrag_native.bm25_sums(x.sentence_ids, x.tfs, x.lengths, x.idf,
                                                    avg_length, k1, b, shortlist_length) AS sums
                  FROM unnest(term_lexemes, term_idfs, term_lengths, term_recent_lengths, term_row_lengths)
                       AS q (lexeme, idf, list_length, recent_length, rows_length)
                  CROSS JOIN LATERAL (
                      (SELECT blk.sentence_ids, blk.tfs, blk.lengths, q.idf FROM windowrag.bm25_blocks blk
                       WHERE blk.collection_id = cid AND blk.lexeme = q.lexeme AND blk.block >= 0
                       ORDER BY blk.block
                       LIMIT (q.list_length + 127) / 128)  -- 128 postings a block
                      UNION ALL
                      (SELECT blk.sentence_ids, blk.tfs, blk.lengths, q.idf FROM windowrag.bm25_blocks blk
                       WHERE blk.collection_id = cid AND blk.lexeme = q.lexeme AND blk.block < 0
                       ORDER BY blk.block DESC  -- the recent tier: -1 holds its strongest
                       LIMIT (q.recent_length + 127) / 128)
                      UNION ALL
                      SELECT array_agg(p.sentence_id), array_agg(p.tf::smallint), array_agg(p.doc_length), q.idf
                      FROM (SELECT p.sentence_id, p.tf, p.doc_length FROM windowrag.bm25_postings p
                            WHERE p.collection_id = cid AND p.lexeme = q.lexeme
                            ORDER BY p.impact DESC
                            LIMIT q.rows_length) p) x) r;
        ELSE
            SELECT array_agg(sl.sentence_id ORDER BY sl.w DESC, sl.sentence_id),
                   array_agg(sl.w ORDER BY sl.w DESC, sl.sentence_id)
              INTO shortlist_ids, shortlist_sums
            FROM (
                SELECT top.sentence_id, sum(top.w) AS w
                FROM (
                    SELECT t.sentence_id,
                           q.idf * windowrag.bm25_term_weight(t.tf, t.doc_length, avg_length, k1, b) AS w
                    FROM unnest(term_lexemes, term_idfs, term_lengths, term_recent_lengths, term_row_lengths)
                         AS q (lexeme, idf, list_length, recent_length, rows_length)
                    CROSS JOIN LATERAL (
                        SELECT x.sentence_id, x.tf, x.doc_length FROM (
                            (SELECT p.sentence_id, p.tf, p.doc_length FROM windowrag.bm25_postings p
                             WHERE p.collection_id = cid AND p.lexeme = q.lexeme
                             ORDER BY p.impact DESC
                             LIMIT q.rows_length)
                            UNION ALL
                            -- unnest in the select list streams the three arrays in step; unnest(a, b, c)
                            -- in FROM would copy each block into a tuplestore first (-14% p50 at 100k)
                            SELECT unnest(bl.sentence_ids), unnest(bl.tfs)::integer, unnest(bl.lengths)
                            FROM ((SELECT blk.sentence_ids, blk.tfs, blk.lengths FROM windowrag.bm25_blocks blk
                                   WHERE blk.collection_id = cid AND blk.lexeme = q.lexeme AND blk.block >= 0
                                   ORDER BY blk.block
                                   LIMIT (q.list_length + 127) / 128)  -- 128 postings a block
                                  UNION ALL
                                  (SELECT blk.sentence_ids, blk.tfs, blk.lengths FROM windowrag.bm25_blocks blk
                                   WHERE blk.collection_id = cid AND blk.lexeme = q.lexeme AND blk.block < 0
                                   ORDER BY blk.block DESC  -- the recent tier: -1 holds its strongest
                                   LIMIT (q.recent_length + 127) / 128)) bl
                        ) x) t  -- (up to 127 postings past list_length from the last block: more candidates, no sort)
                ) top
                GROUP BY top.sentence_id
                -- (Rounded below, not here: there may be thousands of sums. The shortlist holds
                -- the top n by the rounded scores unless more than shortlist_length - n sums tie
                -- with the n-th within 1e-9; identical sentences have identical sums.)
                ORDER BY sum(top.w) DESC, top.sentence_id
                LIMIT shortlist_length) sl;
        END IF;
        -- phase 2 (lists cut): each candidate's exact score from its own tsvector (one row fetch
        -- per candidate; the join also drops packed postings of deleted sentences)
        IF NOT exact_sums AND native THEN
            -- in C: the tsvector read in place (SQL unnests it and joins it to the query terms);
            -- a candidate without a query term has no row there, nor here
            SELECT array_agg(x.sentence_id), array_agg(x.score) INTO shortlist_ids, shortlist_sums
            FROM (SELECT sl.sentence_id,
                         windowrag_native.bm25_score(s.tsv, term_lexemes, term_idfs, s.bm25_length,
                                                     avg_length, k1, b) AS score
                  FROM unnest(shortlist_ids) AS sl (sentence_id)
                  JOIN windowrag.sentences s ON s.id = sl.sentence_id) x
            WHERE x.score > 0;
        ELSIF NOT exact_sums THEN
            SELECT array_agg(x.sentence_id), array_agg(x.score) INTO shortlist_ids, shortlist_sums
            FROM (SELECT sl.sentence_id,
                         sum(q.idf * windowrag.bm25_term_weight(cardinality(u.positions), s.bm25_length,
                                                                avg_length, k1, b)) AS score
                  FROM unnest(shortlist_ids) AS sl (sentence_id)
                  JOIN windowrag.sentences s ON s.id = sl.sentence_id
                  CROSS JOIN LATERAL unnest(s.tsv) u
                  JOIN unnest(term_lexemes, term_idfs) AS q (lexeme, idf) ON q.lexeme = u.lexeme
                  GROUP BY sl.sentence_id) x;
        END IF;
        RETURN QUERY
        SELECT sc.sentence_id, sc.score, (row_number() OVER (ORDER BY sc.score DESC, sc.sentence_id))::integer
        FROM (SELECT u.sentence_id, round(u.w::numeric, 9)::float8 AS score
              FROM unnest(shortlist_ids, shortlist_sums) AS u (sentence_id, w)) sc
        ORDER BY sc.score DESC, sc.sentence_id
        LIMIT n;
    ELSE
        RETURN QUERY
        WITH q AS (
            SELECT t.lexeme, ln(1 + (n_sentences - t.df + 0.5) / (t.df + 0.5)) AS idf
            FROM windowrag.bm25_terms t
            WHERE t.collection_id = cid AND t.lexeme = ANY (lexemes)
        ), matching AS (
            SELECT s.id, s.tsv, s.bm25_length
            FROM windowrag.sentences s
            WHERE s.collection_id = cid
              AND s.document_id = ANY (document_ids)
              AND s.tsv @@ replace(plainto_tsquery(config, CASE WHEN current_setting('server_encoding') = 'UTF8'
                                                                THEN normalize(query_text, NFC) ELSE query_text END
                                                   )::text, ' & ', ' | ')::tsquery  -- NFC as query_lexemes (0031)
        ), scored AS (
            SELECT m.id AS sentence_id,
                   round(sum(q.idf * windowrag.bm25_term_weight(cardinality(u.positions), m.bm25_length, avg_length, k1, b))::numeric, 9)::float8 AS score
            FROM matching m
            CROSS JOIN LATERAL unnest(m.tsv) u
            JOIN q ON q.lexeme = u.lexeme
            GROUP BY m.id
        )
        SELECT sc.sentence_id, sc.score, (row_number() OVER (ORDER BY sc.score DESC, sc.sentence_id))::integer
        FROM scored sc
        ORDER BY sc.score DESC, sc.sentence_id
        LIMIT n;
    END IF;
END $$;

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
-- for 'binary'. The centre is a constant of the index's key (written in the index's key function
-- since 2026-11-26, store.collections._key_function, which the planner inlines; as a literal in
-- the index before); the query passes it (and the spread) as parameters ($5, $6), which the
-- one-shot plan of EXECUTE folds into the same constants, so the planner matches the index
-- without parsing ~3 KB of literal text per vector in each query (migration 0024: dense_search p50 -16% on a centred halfvec index, -22%
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
    -- the caller's settings, put back before returning: set_config(..., true) lasts until the end
    -- of the caller's transaction (migration 0027)
    caller_ef_search text := current_setting('hnsw.ef_search', true);
    caller_iterative_scan text := current_setting('hnsw.iterative_scan', true);
BEGIN
    IF num_nulls(n, ef_search) > 0 OR n NOT BETWEEN 0 AND 1000 THEN  -- (as in bm25_search)
        PERFORM windowrag.check_not_null('dense_search', jsonb_build_object('n', n, 'ef_search', ef_search));
        PERFORM windowrag.check_number('dense_search', 'n', n, 0, 1000);  -- 0: no list (hybrid_search's single-list modes)
    END IF;
    PERFORM windowrag.check_search_limits(n => n, ef_search => ef_search);
    IF n <= 0 THEN
        RETURN;
    END IF;
    SELECT c.dimension, c.vector_index, c.vector_centre, c.vector_spread
    INTO dim, index_kind, centre, spread
    FROM windowrag.collections c WHERE c.id = cid;
    IF query_embedding IS NULL THEN  -- a psql user's first hybrid query, before embed-query
        RAISE EXCEPTION 'windowrag: query_embedding is NULL: dense and hybrid searches need the query''s embedding, which `windowrag embed-query --collection % "the query"` prints; BM25 alone needs none (mode => ''bm25'', or windowrag.bm25_search)',
            collection USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF vector_dims(query_embedding) <> dim THEN
        RAISE EXCEPTION 'windowrag: query embedding has % dimensions, collection % has %',
            vector_dims(query_embedding), quote_literal(collection), dim
            USING ERRCODE = 'data_exception';
    END IF;
    IF vector_norm(query_embedding) = 0 THEN  -- every cosine distance NaN, ranked arbitrarily
        RAISE EXCEPTION 'windowrag: query_embedding is all zeros: a cosine needs a direction (embed the query with the collection''s model: `windowrag embed-query --collection % "the query"`)',
            collection USING ERRCODE = 'invalid_parameter_value';
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
        PERFORM set_config('hnsw.ef_search', coalesce(caller_ef_search, '40'), true),
            set_config('hnsw.iterative_scan', coalesce(caller_iterative_scan, 'off'), true);
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
    PERFORM set_config('hnsw.ef_search', coalesce(caller_ef_search, '40'), true),
            set_config('hnsw.iterative_scan', coalesce(caller_iterative_scan, 'off'), true);
END $$;

-- Reciprocal Rank Fusion: score = Σ weight / (rrf_k + rank) over the lists a sentence is in.
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
        -- mode dense reads no word of the query: a NULL query_text is taken as no text there
        -- (migration 0032; refused since 0031 as in the modes that read it)
        SELECT s.sentence_id, s.rank FROM windowrag.bm25_search(
            collection, CASE WHEN mode = 'dense' THEN coalesce(query_text, '') ELSE query_text END,
            CASE WHEN mode = 'dense' THEN 0 ELSE n END, document_ids, k1, b) s
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

-- Windows: each fused hit opens the window [ordinal − window_size, ordinal + window_size],
-- clamped to its section (or document). Walking the hits in fused order, a window that
-- overlaps or touches a segment of the same section (document) merges into it; otherwise it
-- opens a new segment while fewer than k exist. The walk stops at the first hit that would
-- open a (k+1)-th segment, so the hits used are the shortest prefix of the ranking that fills
-- k segments. No sentence is ever in two segments.
-- plan_cache_mode: generic plans for its statements (and those of the functions it calls). In
-- the default mode PostgreSQL re-planned them on every call, judging a generic plan costlier than
-- one made for the call's values (the final statement's arrays are constants in a custom plan),
-- though both are the same index probes and range scans: -0.6 to -0.9 ms p50 a call at 100k,
-- hybrid, BM25, filtered or clamped to documents alike (migration 0015, docs/performance.md).
-- candidates: 20 per list by default, as the library (PipelineOptions, SearchOptions, the CLI);
-- 50 until migration 0018 (less SQuAD recall at equal tokens, ~1 ms more at 100k).
CREATE OR REPLACE FUNCTION windowrag.search_windows(
    collection text, query_text text, query_embedding vector,
    k integer DEFAULT 5, window_size integer DEFAULT 3, mode text DEFAULT 'hybrid',
    candidates integer DEFAULT 20, clamp text DEFAULT 'section', rrf_k integer DEFAULT 60,
    dense_weight float8 DEFAULT 1.0, bm25_weight float8 DEFAULT 1.0,
    document_ids bigint[] DEFAULT NULL, ef_search integer DEFAULT 100,
    k1 float8 DEFAULT 1.2, b float8 DEFAULT 0.75, max_sentences integer DEFAULT NULL)
RETURNS TABLE (
    segment_rank integer, document_id bigint, external_id text, title text, section_path text[],
    first_ordinal integer, last_ordinal integer, start_char integer, end_char integer,
    text text, score float8, token_count integer, hits jsonb)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    hit record;
    seg_doc bigint[] := '{}';
    seg_group bigint[] := '{}';
    seg_lo integer[] := '{}';
    seg_hi integer[] := '{}';
    seg_score float8[] := '{}';
    seg_section bigint[] := '{}';
    seg_hits jsonb[] := '{}';
    target integer;
    i integer;
    budget integer := coalesce(max_sentences, 2147483647);  -- NULL: no budget
    covered integer := 0;
    new_lo integer;
    new_hi integer;
    absorbed integer;
    room integer;
BEGIN
    IF num_nulls(collection, k, window_size, mode, candidates, clamp, rrf_k, dense_weight, bm25_weight, ef_search, k1, b) > 0 THEN
        PERFORM windowrag.check_not_null('search_windows', jsonb_build_object(
            'collection', collection, 'k', k, 'window_size', window_size, 'mode', mode, 'candidates', candidates,
            'clamp', clamp, 'rrf_k', rrf_k, 'dense_weight', dense_weight, 'bm25_weight', bm25_weight,
            'ef_search', ef_search, 'k1', k1, 'b', b));
    END IF;
    PERFORM windowrag.check_search_limits(collection => collection, query_text => query_text, k => k, window_size => window_size, candidates => candidates, ef_search => ef_search, max_sentences => max_sentences, rrf_k => rrf_k);
    IF clamp NOT IN ('section', 'document') THEN
        RAISE EXCEPTION 'windowrag: clamp must be section or document, not %', quote_literal(clamp)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF k <= 0 OR window_size < 0 THEN
        RAISE EXCEPTION 'windowrag: k must be positive and window_size non-negative (got %, %)', k, window_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_sentences IS NOT NULL AND max_sentences <= 0 THEN
        RAISE EXCEPTION 'windowrag: max_sentences must be positive (got %)', max_sentences
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The collection named first (0033): where the role sees no sentence (a tenant service that
    -- set no tenant, an empty database), the join below never ran hybrid_search, which names it,
    -- and a misspelt or hidden collection gave no row instead of "does not exist".
    PERFORM windowrag.collection_id(collection);
    -- Each hit's window and its JSON come with it from the query (cheaper in the executor than
    -- as PL/pgSQL expressions, ~1 µs each); the walk below only compares and merges ranges.
    -- grp, the section (or document) id, is unique across documents: equal grp, same document.
    FOR hit IN
        SELECT s.document_id, s.section_id, s.ordinal, h.rrf_score,
               greatest(s.ordinal - window_size, CASE WHEN clamp = 'section' THEN sec.first_sentence ELSE 0 END) AS lo,
               least(s.ordinal + window_size,
                     CASE WHEN clamp = 'section' THEN sec.last_sentence
                          ELSE (SELECT d.sentence_count - 1 FROM windowrag.documents d WHERE d.id = s.document_id)
                     END) AS hi,
               CASE WHEN clamp = 'section' THEN s.section_id ELSE s.document_id END AS grp,
               jsonb_build_object('sentence_ordinal', s.ordinal, 'dense_rank', h.dense_rank,
                                  'bm25_rank', h.bm25_rank, 'rrf_score', h.rrf_score) AS hit_json
        FROM windowrag.hybrid_search(collection, query_text, query_embedding, candidates, mode, rrf_k,
                                     dense_weight, bm25_weight, document_ids, ef_search, k1, b) h
        JOIN windowrag.sentences s ON s.id = h.sentence_id
        JOIN windowrag.sections sec ON sec.id = s.section_id
        ORDER BY h.rank  -- (documents are read only for clamp 'document': joined, they were all hashed)
    LOOP
        -- What would this window add? The union with the segments it overlaps or touches. With
        -- max_sentences, a window that would take the segments past it is skipped (in short
        -- scoped documents hits keep landing next to each other, and merging them all can
        -- grow one segment to most of the document).
        new_lo := hit.lo;
        new_hi := hit.hi;
        absorbed := 0;
        FOR i IN 1 .. cardinality(seg_lo) LOOP
            IF seg_group[i] = hit.grp AND seg_lo[i] <= hit.hi + 1 AND hit.lo <= seg_hi[i] + 1 THEN
                new_lo := least(new_lo, seg_lo[i]);
                new_hi := greatest(new_hi, seg_hi[i]);
                absorbed := absorbed + seg_hi[i] - seg_lo[i] + 1;
            END IF;
        END LOOP;
        IF absorbed = 0 THEN
            -- touches no segment: opens one, while fewer than k exist and the budget allows
            EXIT WHEN cardinality(seg_lo) >= k;  -- the walk ends at the first hit that would open a (k+1)-th
            CONTINUE WHEN covered >= budget;
            IF covered + (new_hi - new_lo + 1) > budget THEN
                -- the window cut around its hit to the sentences the budget leaves, as evenly on
                -- both sides as the section allows (until migration 0027 it was skipped: with
                -- max_sentences below one window, the best hits were dropped and nothing returned)
                room := budget - covered - 1;
                new_lo := hit.ordinal - least(hit.ordinal - hit.lo, greatest(room - (hit.hi - hit.ordinal), room / 2));
                new_hi := hit.ordinal + least(hit.hi - hit.ordinal, room - (hit.ordinal - new_lo));
            END IF;
            covered := covered + (new_hi - new_lo + 1);
            seg_doc := seg_doc || hit.document_id;
            seg_group := seg_group || hit.grp;
            seg_lo := seg_lo || new_lo;
            seg_hi := seg_hi || new_hi;
            seg_score := seg_score || hit.rrf_score;
            seg_section := seg_section || hit.section_id;
            seg_hits := seg_hits || jsonb_build_array(hit.hit_json);
            CONTINUE;
        END IF;
        IF covered + (new_hi - new_lo + 1) - absorbed > budget AND (new_hi - new_lo + 1) > absorbed THEN
            -- over budget: the hit only counts where a segment already holds its sentence
            FOR i IN 1 .. cardinality(seg_lo) LOOP
                IF seg_group[i] = hit.grp AND hit.ordinal BETWEEN seg_lo[i] AND seg_hi[i] THEN
                    seg_hits[i] := seg_hits[i] || hit.hit_json;
                END IF;
            END LOOP;
            CONTINUE;
        END IF;
        covered := covered + (new_hi - new_lo + 1) - absorbed;
        target := NULL;
        i := 1;
        WHILE i <= cardinality(seg_lo) LOOP
            IF seg_group[i] = hit.grp AND seg_lo[i] <= hit.hi + 1 AND hit.lo <= seg_hi[i] + 1 THEN
                IF target IS NULL THEN
                    target := i;
                    seg_lo[i] := least(seg_lo[i], hit.lo);
                    seg_hi[i] := greatest(seg_hi[i], hit.hi);
                    seg_hits[i] := seg_hits[i] || hit.hit_json;
                    i := i + 1;
                ELSE
                    -- the new window bridges two segments: fold segment i into target
                    seg_lo[target] := least(seg_lo[target], seg_lo[i]);
                    seg_hi[target] := greatest(seg_hi[target], seg_hi[i]);
                    seg_score[target] := greatest(seg_score[target], seg_score[i]);
                    seg_hits[target] := seg_hits[target] || seg_hits[i];
                    seg_doc := seg_doc[1:i-1] || seg_doc[i+1:];
                    seg_group := seg_group[1:i-1] || seg_group[i+1:];
                    seg_lo := seg_lo[1:i-1] || seg_lo[i+1:];
                    seg_hi := seg_hi[1:i-1] || seg_hi[i+1:];
                    seg_score := seg_score[1:i-1] || seg_score[i+1:];
                    seg_section := seg_section[1:i-1] || seg_section[i+1:];
                    seg_hits := seg_hits[1:i-1] || seg_hits[i+1:];
                END IF;
            ELSE
                i := i + 1;
            END IF;
        END LOOP;
    END LOOP;

    -- each segment's character range, tokens and text from one range scan of its sentences:
    -- the text is the sentences with the gaps between them (the document's own characters,
    -- migration 0014), so the document's text, compressed and often long, is read only when a
    -- gap is missing (sentences written before 0014)
    RETURN QUERY
    SELECT (row_number() OVER (ORDER BY g.score DESC, g.ord))::integer,
           g.doc, d.external_id, d.title,
           -- a window that runs over several sections (clamp 'document'): the headings they share
           -- (until migration 0031 the section of its first hit)
           CASE WHEN w.one_section THEN sec.heading_path
                ELSE windowrag.shared_heading_path(g.doc, g.lo, g.hi) END,
           g.lo, g.hi,
           w.start_char, w.end_char,
           CASE WHEN w.gaps_known THEN w.text ELSE substr(d.text, w.start_char + 1, w.end_char - w.start_char) END,
           g.score, w.tokens, g.hits
    FROM unnest(seg_doc, seg_lo, seg_hi, seg_score, seg_section, seg_hits)
         WITH ORDINALITY AS g(doc, lo, hi, score, section, hits, ord)
    JOIN windowrag.documents d ON d.id = g.doc
    JOIN windowrag.sections sec ON sec.id = g.section
    CROSS JOIN LATERAL (
        SELECT min(s.start_char) AS start_char, max(s.end_char) AS end_char, sum(s.token_count)::integer AS tokens,
               string_agg(s.text || CASE WHEN s.ordinal < g.hi THEN coalesce(s.gap, '') ELSE '' END, ''
                          ORDER BY s.ordinal) AS text,
               bool_and(s.ordinal = g.hi OR s.gap IS NOT NULL) AS gaps_known,
               min(s.section_id) = max(s.section_id) AS one_section
        FROM windowrag.sentences s
        WHERE s.document_id = g.doc AND s.ordinal BETWEEN g.lo AND g.hi
        OFFSET 0) w  -- a fence: one range scan per segment, not a join over the document's sentences
    ORDER BY g.score DESC, g.ord;
END $$;

-- The headings that the sections of a document's sentences FIRST_ORDINAL..LAST_ORDINAL share:
-- the section path that holds all of them (migration 0031).
CREATE OR REPLACE FUNCTION windowrag.shared_heading_path(document_id bigint, first_ordinal integer, last_ordinal integer)
RETURNS text[] LANGUAGE sql STABLE AS $$
    WITH paths AS (
        SELECT DISTINCT sec.heading_path
        FROM windowrag.sentences s JOIN windowrag.sections sec ON sec.id = s.section_id
        WHERE s.document_id = shared_heading_path.document_id
          AND s.ordinal BETWEEN shared_heading_path.first_ordinal AND shared_heading_path.last_ordinal
    )
    SELECT (SELECT p.heading_path FROM paths p LIMIT 1)[1:coalesce(max(depth), 0)]
    FROM generate_series(1, (SELECT min(cardinality(p.heading_path)) FROM paths p)) depth
    WHERE (SELECT count(DISTINCT p.heading_path[1:depth]) FROM paths p) = 1
$$;
-- (its comment here, not in comments.sql: a database downgraded below 0031 has no such function)
COMMENT ON FUNCTION windowrag.shared_heading_path(bigint, integer, integer) IS
'The headings shared by the sections of a document''s sentences first_ordinal..last_ordinal: the section path of a window that runs over several sections.';

-- The window of one sentence (what search_windows would send for it alone). section_path is
-- the sentence's section; with clamp 'document', where the window may run into the sections
-- around it, the headings those sections share (migration 0031).
-- PL/pgSQL since migration 0027, to check its arguments: a clamp other than section or document,
-- or NULL, clamped at the document, and a NULL window_size returned the whole section; a NULL
-- sentence_id is refused since 0031 (it returned no row).
CREATE OR REPLACE FUNCTION windowrag.sentence_window(
    sentence_id bigint, window_size integer DEFAULT 3, clamp text DEFAULT 'section')
RETURNS TABLE (document_id bigint, external_id text, section_path text[], first_ordinal integer,
               last_ordinal integer, start_char integer, end_char integer, text text)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    PERFORM windowrag.check_not_null('sentence_window', jsonb_build_object(
        'sentence_id', sentence_id, 'window_size', window_size, 'clamp', clamp));
    PERFORM windowrag.check_search_limits(window_size => window_size);
    IF clamp NOT IN ('section', 'document') THEN
        RAISE EXCEPTION 'windowrag: clamp must be section or document, not %', quote_literal(clamp)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    WITH hit AS (
        SELECT s.document_id, s.ordinal,
               greatest(s.ordinal - sentence_window.window_size,
                        CASE WHEN sentence_window.clamp = 'section' THEN sec.first_sentence ELSE 0 END) AS lo,
               least(s.ordinal + sentence_window.window_size,
                     CASE WHEN sentence_window.clamp = 'section' THEN sec.last_sentence
                          ELSE (SELECT d.sentence_count - 1 FROM windowrag.documents d WHERE d.id = s.document_id)
                     END) AS hi,
               sec.heading_path
        FROM windowrag.sentences s
        JOIN windowrag.sections sec ON sec.id = s.section_id
        WHERE s.id = sentence_window.sentence_id
    )
    SELECT h.document_id, d.external_id,
           CASE WHEN sentence_window.clamp = 'section' THEN h.heading_path
                ELSE windowrag.shared_heading_path(h.document_id, h.lo, h.hi) END,
           h.lo, h.hi, a.start_char, z.end_char,
           substr(d.text, a.start_char + 1, z.end_char - a.start_char)
    FROM hit h
    JOIN windowrag.documents d ON d.id = h.document_id
    JOIN windowrag.sentences a ON a.document_id = h.document_id AND a.ordinal = h.lo
    JOIN windowrag.sentences z ON z.document_id = h.document_id AND z.ordinal = h.hi;
END $$;

-- Every sentence that could be sent, with its own relevance signals: the neighbourhood
-- (± radius, clamped to the section or document) of each of the best `candidates` fused hits,
-- once each, in document order. Per sentence: its cosine similarity to the query (its own
-- embedding, hit or not), its BM25 score, the query lexemes it holds (with their idf), and its
-- fused/dense/BM25 ranks when it is a hit, and its gap: the text between it and the next
-- sentence of its section when that is more than whitespace (Markdown list markers, a table's
-- |---| row, raw HTML tags; NULL otherwise), which a run holding both sends (migration 0028),
-- and its kind (sentence, heading, list_item, ...: a heading has no value of its own, 0029).
-- A list item or table row also gets its lead (0030): for a table row below the header, the
-- table's header row; for a nested list item, its parent item; for a list item, the sentence
-- just before its list (the lead-in, "The plan does not cover:") when that is in its section:
-- its ordinal, offsets and tokens. A context that starts inside the list or table is sent with
-- its lead in front, so that "| Plus | 90% |" or "Crowns" is read with what it means.
-- Selection (which runs to send under a token budget, the gaps' tokens counted) happens in
-- Python over these rows (windowrag_pg/segment/select.py).
-- A new result column cannot be added by CREATE OR REPLACE: the function is dropped first
-- (comments.sql, run by the migrations that install this file, restores its comment).
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
    kind text, lead_ordinal integer, lead_start_char integer, lead_end_char integer, lead_token_count integer)
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
           s.kind, lead.ordinal, lead.start_char, lead.end_char, lead.token_count
    FROM cand s
    CROSS JOIN LATERAL (SELECT sec.heading_path, sec.first_sentence, sec.last_sentence FROM windowrag.sections sec
                        WHERE sec.id = s.section_id OFFSET 0) sec
    -- the list or table a list item or table row is in begins after the last other unit of its
    -- section before it (one backward probe of (document_id, ordinal)), looked for among the 200
    -- units above it: an item further down a longer list has no lead (a scan of each candidate's
    -- whole list made a query on a page of thousands of links cost tens of milliseconds more)
    LEFT JOIN LATERAL (
        SELECT max(b.ordinal) AS ordinal, greatest(sec.first_sentence, s.ordinal - 200) AS lowest,
               -- its first unit, when known
               coalesce(max(b.ordinal) + 1,
                        CASE WHEN s.ordinal - 200 <= sec.first_sentence THEN sec.first_sentence END) AS first_unit
        FROM windowrag.sentences b
        WHERE s.kind IN ('list_item', 'table_row') AND b.document_id = s.document_id
          AND b.ordinal >= greatest(sec.first_sentence, s.ordinal - 200) AND b.ordinal < s.ordinal
          AND b.kind <> s.kind
    ) before_block ON true
    -- a list item's marker indent: what precedes "- " or "1." on its line (the end of the gap
    -- before it); a nested item's lead is its parent item, the nearest item above it in the list
    -- with a smaller indent ("Unacceptable behaviour includes:" over "  - Trolling.", not the
    -- list's lead-in "We encourage you to:")
    LEFT JOIN LATERAL (
        SELECT length(substring(p.gap FROM '([[:blank:]>]*)[^\n]*$')) AS indent
        FROM windowrag.sentences p
        WHERE s.kind = 'list_item' AND p.document_id = s.document_id AND p.ordinal = s.ordinal - 1
        OFFSET 0
    ) marker ON true
    LEFT JOIN LATERAL (
        -- walked upwards from the item, each unit's indent from the gap of the unit above it
        SELECT x.ordinal
        FROM (SELECT b.ordinal, b.kind, lead(b.gap) OVER (ORDER BY b.ordinal DESC) AS gap_before
              FROM windowrag.sentences b
              WHERE marker.indent > 0 AND b.document_id = s.document_id
                AND b.ordinal BETWEEN coalesce(before_block.ordinal, before_block.lowest) AND s.ordinal - 1
              ORDER BY b.ordinal DESC) x
        WHERE x.kind = 'list_item'
          AND length(substring(x.gap_before FROM '([[:blank:]>]*)[^\n]*$')) < marker.indent
        LIMIT 1
    ) parent ON true
    CROSS JOIN LATERAL (
        SELECT CASE
            -- a nested item's parent, or the lead-in: the unit of the section right before the list
            WHEN s.kind = 'list_item' THEN coalesce(parent.ordinal, before_block.ordinal)
            -- (a list that starts above the 200 units looked at: no lead-in is known)
            -- the header: the nearest row above in the same table followed by the |---| row
            -- (two tables with nothing between them are told apart by it); a header has none.
            -- Without a |---| row (HTML, DOCX: their text has none), the table's first row.
            WHEN s.kind = 'table_row'
                 AND NOT coalesce(s.gap LIKE '%|%' AND s.gap ~ '^[[:space:]>|:]*-[[:space:]>|:-]*$', false) THEN
                coalesce((SELECT max(h.ordinal) FROM windowrag.sentences h
                          WHERE h.document_id = s.document_id AND h.kind = 'table_row'
                            AND h.ordinal > coalesce(before_block.ordinal, before_block.lowest - 1)
                            AND h.ordinal < s.ordinal
                            AND h.gap LIKE '%|%' AND h.gap ~ '^[[:space:]>|:]*-[[:space:]>|:-]*$'),
                         CASE WHEN before_block.first_unit < s.ordinal THEN before_block.first_unit END)
            END AS ordinal
    ) lead_at
    LEFT JOIN LATERAL (
        SELECT l.ordinal, l.start_char, l.end_char, l.token_count
        FROM windowrag.sentences l
        -- a list's lead-in is a sentence (not a heading: the section path already says it)
        WHERE l.document_id = s.document_id AND l.ordinal = lead_at.ordinal
          AND (s.kind <> 'list_item' OR l.kind = 'sentence' OR l.ordinal = parent.ordinal)
        OFFSET 0
    ) lead ON true
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

-- BM25 maintenance (migrations 0011, 0013). Postings live in two places: windowrag.bm25_blocks,
-- each term's postings packed 128 to a row in impact order (block 0 the strongest; a posting is
-- its sentence id, tf and sentence length, ~14 bytes, instead of ~250 as a row with two btrees;
-- the impact, the weight at the then average length, only orders them), and
-- windowrag.bm25_postings, one row each,
-- for the sentences written since the collection was last packed. Blocks come in two tiers
-- (migration 0021): blocks 0, 1, ... from the last full pack (bm25_rebuild), blocks -1, -2, ...
-- from packs of only the sentences written since it (bm25_pack_recent). bm25_search reads all.
-- The statement triggers on windowrag.sentences keep the statistics (bm25_stats, bm25_terms)
-- exact and transactional and write the new postings as rows; windowrag.bm25_rebuild packs.
-- A bulk load defers all of it (windowrag.bm25_deferred = on in its transactions) and rebuilds
-- once, set-based, at its end. They run as the owner (docs/tenancy.md; EXECUTE revoked from
-- PUBLIC by migration 0003): SECURITY DEFINER and the search_path are restated here because
-- CREATE OR REPLACE resets them.
CREATE OR REPLACE FUNCTION windowrag.bm25_after_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF current_setting('windowrag.bm25_deferred', true) = 'on' THEN
        RETURN NULL;  -- a bulk load: windowrag.bm25_rebuild counts everything at its end
    END IF;
    INSERT INTO windowrag.bm25_stats AS s (collection_id, n_sentences, total_length, pending_postings)
    SELECT collection_id, count(*), sum(bm25_length), sum(length(tsv)) FROM new_rows GROUP BY collection_id
    ON CONFLICT (collection_id) DO UPDATE
        SET n_sentences = s.n_sentences + excluded.n_sentences,
            total_length = s.total_length + excluded.total_length,
            pending_postings = s.pending_postings + excluded.pending_postings;

    INSERT INTO windowrag.bm25_terms AS t (collection_id, lexeme, df)
    SELECT n.collection_id, u.lexeme, count(*)
    FROM new_rows n, unnest(n.tsv) u
    GROUP BY 1, 2
    ON CONFLICT (collection_id, lexeme) DO UPDATE SET df = t.df + excluded.df;

    INSERT INTO windowrag.bm25_postings (collection_id, lexeme, sentence_id, tf, doc_length, impact)
    SELECT n.collection_id, u.lexeme, n.id, cardinality(u.positions), n.bm25_length,
           windowrag.bm25_term_weight(cardinality(u.positions), n.bm25_length,
                                      greatest(s.total_length::float8 / nullif(s.n_sentences, 0), 1.0))
    FROM new_rows n
    JOIN windowrag.bm25_stats s ON s.collection_id = n.collection_id,
    unnest(n.tsv) u;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION windowrag.bm25_after_delete() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF current_setting('windowrag.bm25_deferred', true) = 'on' THEN
        RETURN NULL;  -- a bulk load replacing documents: rebuilt at its end
    END IF;
    -- unpacked postings go now; packed ones stay (skipped by queries) and are counted as stale
    -- until the next pack. A lexeme's df counts both; its packed_df only the packed postings of
    -- live sentences, and its recent_df those of them in the recent tier, the sentences above
    -- the last full pack's packed_through (bm25_search shares a cut list by them).
    WITH removed AS (
        DELETE FROM windowrag.bm25_postings p
        USING (SELECT o.collection_id, u.lexeme, o.id FROM old_rows o, unnest(o.tsv) u) g
        WHERE p.collection_id = g.collection_id AND p.lexeme = g.lexeme AND p.sentence_id = g.id
        RETURNING p.collection_id, p.lexeme
    ), gone_by_lexeme AS (
        SELECT o.collection_id, u.lexeme, count(*) AS n, count(*) FILTER (WHERE o.id > s.packed_through) AS recent
        FROM old_rows o LEFT JOIN windowrag.bm25_stats s ON s.collection_id = o.collection_id, unnest(o.tsv) u
        GROUP BY 1, 2
    ), unpacked_by_lexeme AS (
        SELECT collection_id, lexeme, count(*) AS n FROM removed GROUP BY 1, 2
    ), terms AS (
        -- (rows are all above packed_through: written after the last pack)
        UPDATE windowrag.bm25_terms t
        SET df = t.df - g.n, packed_df = greatest(t.packed_df - (g.n - coalesce(u.n, 0)), 0),
            recent_df = greatest(t.recent_df - greatest(g.recent - coalesce(u.n, 0), 0), 0)
        FROM gone_by_lexeme g LEFT JOIN unpacked_by_lexeme u USING (collection_id, lexeme)
        WHERE t.collection_id = g.collection_id AND t.lexeme = g.lexeme
    ), unpacked AS (
        SELECT collection_id, count(*) AS n FROM removed GROUP BY 1
    ), gone AS (
        SELECT collection_id, count(*) AS n, sum(bm25_length) AS len, sum(length(tsv)) AS postings
        FROM old_rows GROUP BY 1
    )
    UPDATE windowrag.bm25_stats s
    SET n_sentences = s.n_sentences - gone.n, total_length = s.total_length - gone.len,
        pending_postings = s.pending_postings - coalesce(unpacked.n, 0),
        stale_postings = s.stale_postings + gone.postings - coalesce(unpacked.n, 0)
    FROM gone LEFT JOIN unpacked USING (collection_id)
    WHERE s.collection_id = gone.collection_id;
    DELETE FROM windowrag.bm25_terms WHERE df <= 0;
    RETURN NULL;
END $$;

-- Pack postings into impact-ordered blocks of 128: every sentence of the collection (blocks 0,
-- 1, ...: the first tier), or only those with ids above newer_than (blocks -1, -2, ...: the
-- recent tier, migration 0021), each posting weighed at avg_length for its order. Called by
-- bm25_rebuild and bm25_pack_recent, which hold the collection's write lock.
CREATE OR REPLACE FUNCTION windowrag.bm25_write_blocks(cid integer, avg_length float8, newer_than bigint)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- The blocks go to a temporary table first: CREATE TABLE AS may sort every posting with
    -- parallel workers, INSERT ... SELECT may not (26-35 s against 36-44 s at 1M sentences, the
    -- same blocks; migration 0019, docs/performance.md).
    IF to_regclass('pg_temp.windowrag_packed_blocks') IS NOT NULL THEN  -- (DROP IF EXISTS printed a NOTICE)
        DROP TABLE pg_temp.windowrag_packed_blocks;
    END IF;
    CREATE TEMP TABLE windowrag_packed_blocks AS
    SELECT p.lexeme, CASE WHEN newer_than IS NULL THEN (p.rn - 1) / 128 ELSE -1 - (p.rn - 1) / 128 END AS block,
           max(p.impact) AS max_impact,
           array_agg(p.sentence_id ORDER BY p.rn) AS sentence_ids, array_agg(p.tf ORDER BY p.rn) AS tfs,
           array_agg(p.bm25_length ORDER BY p.rn) AS lengths
    -- lexemes grouped bytewise (COLLATE "C"): the same groups as any deterministic collation,
    -- without a strcoll() per comparison in the sort of every posting (a C.UTF-8 database sorted
    -- 1.2M postings in 2.8 s, bytewise in 1.2 s; migration 0017)
    FROM (SELECT u.lexeme COLLATE "C" AS lexeme, x.id AS sentence_id, cardinality(u.positions)::smallint AS tf,
                 x.bm25_length, w.impact,
                 row_number() OVER (PARTITION BY u.lexeme COLLATE "C" ORDER BY w.impact DESC, x.id) AS rn
          FROM windowrag.sentences x
          CROSS JOIN LATERAL unnest(x.tsv) u
          CROSS JOIN LATERAL (SELECT windowrag.bm25_term_weight(cardinality(u.positions), x.bm25_length,
                                                                avg_length)::real AS impact) w
          WHERE x.collection_id = cid AND (newer_than IS NULL OR x.id > newer_than)) p
    GROUP BY p.lexeme, (p.rn - 1) / 128;
    INSERT INTO windowrag.bm25_blocks (collection_id, lexeme, block, max_impact, sentence_ids, tfs, lengths)
    SELECT cid, t.lexeme, t.block, t.max_impact, t.sentence_ids, t.tfs, t.lengths FROM pg_temp.windowrag_packed_blocks t;
    DROP TABLE pg_temp.windowrag_packed_blocks;
END $$;
REVOKE EXECUTE ON FUNCTION windowrag.bm25_write_blocks(integer, float8, bigint) FROM PUBLIC;

-- Recount a collection's BM25 statistics from its sentences and pack all its postings into
-- blocks (the first tier; no recent tier, no rows after it), in one transaction holding the
-- collection's write lock (the rule of sql/lock_collection_writes.sql): its writers wait,
-- readers see the old state until commit. The end of a bulk load, `doctor --fix`, and the full
-- pack of an incrementally grown collection (store/bm25.py decides when). Returns the number of
-- postings packed. SECURITY INVOKER: only roles that may write bm25_* (the owner) can run it;
-- tenant roles cannot.
CREATE OR REPLACE FUNCTION windowrag.bm25_rebuild(collection_id integer) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    cid integer := bm25_rebuild.collection_id;
    avg_length float8;
    packed bigint;
    caller_work_mem text := current_setting('work_mem');  -- put back before returning (migration 0027)
BEGIN
    PERFORM 1 FROM windowrag.collections c WHERE c.id = cid FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'windowrag: collection id % does not exist', cid USING ERRCODE = 'undefined_object';
    END IF;
    PERFORM set_config('work_mem', greatest(pg_size_bytes(current_setting('work_mem')) / 1024, 262144)::text || 'kB', true);
    DELETE FROM windowrag.bm25_postings p WHERE p.collection_id = cid;
    DELETE FROM windowrag.bm25_blocks b WHERE b.collection_id = cid;
    DELETE FROM windowrag.bm25_terms t WHERE t.collection_id = cid;
    INSERT INTO windowrag.bm25_stats AS s (collection_id, n_sentences, total_length)
    SELECT cid, count(*), coalesce(sum(x.bm25_length), 0) FROM windowrag.sentences x WHERE x.collection_id = cid
    ON CONFLICT (collection_id) DO UPDATE
        SET n_sentences = excluded.n_sentences, total_length = excluded.total_length;
    SELECT greatest(s.total_length::float8 / nullif(s.n_sentences, 0), 1.0) INTO avg_length
    FROM windowrag.bm25_stats s WHERE s.collection_id = cid;

    PERFORM windowrag.bm25_write_blocks(cid, avg_length, NULL);

    INSERT INTO windowrag.bm25_terms (collection_id, lexeme, df, packed_df)
    SELECT cid, b.lexeme, sum(cardinality(b.sentence_ids)), sum(cardinality(b.sentence_ids))
    FROM windowrag.bm25_blocks b WHERE b.collection_id = cid
    GROUP BY b.lexeme;

    SELECT coalesce(sum(t.df), 0) INTO packed FROM windowrag.bm25_terms t WHERE t.collection_id = cid;
    UPDATE windowrag.bm25_stats s
    SET packed_postings = packed, pending_postings = 0, stale_postings = 0, recent_postings = 0,
        packed_through = (SELECT max(x.id) FROM windowrag.sentences x WHERE x.collection_id = cid)
    WHERE s.collection_id = cid;
    PERFORM set_config('work_mem', caller_work_mem, true);
    RETURN packed;
END $$;
REVOKE EXECUTE ON FUNCTION windowrag.bm25_rebuild(integer) FROM PUBLIC;

-- Pack only the postings written since the collection's last full pack (bm25_rebuild): those
-- of the sentences with ids above bm25_stats.packed_through, the recent tier's blocks and the
-- rows alike, into a new recent tier (blocks -1, -2, ...); the first tier stays as it is. Its
-- cost follows the postings written since the full pack, not the collection's (at 1M sentences
-- 3.5 s for 10% of them against ~30 s for a full pack; migration 0021). The statistics are kept
-- by the triggers; packed postings of deleted sentences in the first tier stay counted as stale
-- (store/bm25.py packs in full when there are any). Falls back to bm25_rebuild when the
-- collection was never packed in full. Same lock and rights as bm25_rebuild; returns the
-- postings packed into the recent tier.
CREATE OR REPLACE FUNCTION windowrag.bm25_pack_recent(collection_id integer) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    cid integer := bm25_pack_recent.collection_id;
    avg_length float8;
    through bigint;
    old_recent bigint;
    recent bigint;
    caller_work_mem text := current_setting('work_mem');  -- put back before returning (migration 0027)
BEGIN
    PERFORM 1 FROM windowrag.collections c WHERE c.id = cid FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'windowrag: collection id % does not exist', cid USING ERRCODE = 'undefined_object';
    END IF;
    SELECT s.packed_through, s.recent_postings, greatest(s.total_length::float8 / nullif(s.n_sentences, 0), 1.0)
      INTO through, old_recent, avg_length
    FROM windowrag.bm25_stats s WHERE s.collection_id = cid;
    IF through IS NULL THEN
        PERFORM windowrag.bm25_rebuild(cid);
        RETURN 0;
    END IF;
    PERFORM set_config('work_mem', greatest(pg_size_bytes(current_setting('work_mem')) / 1024, 262144)::text || 'kB', true);
    DELETE FROM windowrag.bm25_postings p WHERE p.collection_id = cid;
    DELETE FROM windowrag.bm25_blocks b WHERE b.collection_id = cid AND b.block < 0;
    PERFORM windowrag.bm25_write_blocks(cid, avg_length, through);

    -- a lexeme's packed postings: the first tier's (packed_df - recent_df, both kept exact by the
    -- delete trigger) and the new recent tier's
    UPDATE windowrag.bm25_terms t SET packed_df = t.packed_df - t.recent_df, recent_df = 0
    WHERE t.collection_id = cid AND t.recent_df <> 0;
    UPDATE windowrag.bm25_terms t SET packed_df = t.packed_df + r.n, recent_df = r.n
    FROM (SELECT b.lexeme, sum(cardinality(b.sentence_ids))::integer AS n
          FROM windowrag.bm25_blocks b WHERE b.collection_id = cid AND b.block < 0 GROUP BY 1) r
    WHERE t.collection_id = cid AND t.lexeme = r.lexeme;
    SELECT coalesce(sum(cardinality(b.sentence_ids)), 0) INTO recent
    FROM windowrag.bm25_blocks b WHERE b.collection_id = cid AND b.block < 0;
    UPDATE windowrag.bm25_stats s
    SET packed_postings = s.packed_postings - old_recent + recent, recent_postings = recent, pending_postings = 0
    WHERE s.collection_id = cid;
    PERFORM set_config('work_mem', caller_work_mem, true);
    RETURN recent;
END $$;
REVOKE EXECUTE ON FUNCTION windowrag.bm25_pack_recent(integer) FROM PUBLIC;

-- The functions only the schema owner may run (migration 0032): the SECURITY DEFINER ones, which
-- act with the owner's privileges (the BM25 triggers, attached to a table of one's own, rewrite
-- any tenant's statistics: CREATE TRIGGER checks EXECUTE), and those that rewrite BM25 tables or
-- grant privileges. role_tenants is SECURITY DEFINER and callable by all on purpose: it answers
-- only for roles the caller belongs to, and every policy reaches it through current_tenants.
-- Listed from the catalog, not by hand, so that a SECURITY DEFINER function added later is in.
CREATE OR REPLACE FUNCTION windowrag.owner_only_functions() RETURNS SETOF regprocedure
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT p.oid::regprocedure FROM pg_proc p
    WHERE p.pronamespace = 'windowrag'::regnamespace
      AND ((p.prosecdef AND p.proname <> 'role_tenants')
           OR p.proname IN ('bm25_write_blocks', 'bm25_rebuild', 'bm25_pack_recent', 'setup_tenancy_roles',
                            'setup_tenancy_roles_0003', 'revoke_owner_only_functions'))
    ORDER BY p.oid::regprocedure::text
$$;
COMMENT ON FUNCTION windowrag.owner_only_functions() IS
'The functions of the schema only its owner may run: the SECURITY DEFINER ones (but role_tenants), the BM25 rebuilds and the role setup; windowrag doctor checks that nobody else may.';

-- EXECUTE on the owner-only functions taken back from PUBLIC and the three group roles, where a
-- restore without privileges (pg_restore --no-acl: every function executable by PUBLIC) or a
-- grant ON ALL FUNCTIONS gave it (migration 0032; run by setup_tenancy_roles and doctor --fix).
CREATE OR REPLACE FUNCTION windowrag.revoke_owner_only_functions() RETURNS integer
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    fn regprocedure;
    role_name text;
    revoked integer := 0;
BEGIN
    FOR fn IN SELECT f FROM windowrag.owner_only_functions() f LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', fn);
        FOREACH role_name IN ARRAY ARRAY['windowrag_reader', 'windowrag_writer', 'windowrag_service'] LOOP
            CONTINUE WHEN NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = role_name);
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM %I', fn, role_name);
        END LOOP;
        revoked := revoked + 1;
    END LOOP;
    RETURN revoked;
END $$;
REVOKE EXECUTE ON FUNCTION windowrag.revoke_owner_only_functions() FROM PUBLIC;
COMMENT ON FUNCTION windowrag.revoke_owner_only_functions() IS
'Takes EXECUTE on owner_only_functions() back from PUBLIC and the windowrag_* roles (after pg_restore --no-acl, say); returns how many functions it went over. Run by setup_tenancy_roles() and windowrag doctor --fix.';

-- Group roles and their privileges: the grants of migrations 0003 and 0007 (0032: and the
-- owner-only functions kept so: 0003's body grants readers EXECUTE ON ALL FUNCTIONS, which
-- included the BM25 rebuilds, and a restore without privileges left all of them to PUBLIC).
-- Idempotent; run by the owner (SELECT windowrag.setup_tenancy_roles()) after a DBA has created
-- the roles, or after a restore. Writers get no INSERT on collections and no USAGE on its integer
-- sequence (0007: the owner provisions collections; see sql/tenant_ids.sql).
CREATE OR REPLACE FUNCTION windowrag.setup_tenancy_roles() RETURNS void
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM windowrag.setup_tenancy_roles_0003();
    IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'windowrag_writer') THEN
        REVOKE INSERT ON windowrag.collections FROM windowrag_writer;
        REVOKE USAGE ON SEQUENCE windowrag.collections_id_seq FROM windowrag_writer;
    END IF;
    PERFORM windowrag.revoke_owner_only_functions();
END $$;
REVOKE EXECUTE ON FUNCTION windowrag.setup_tenancy_roles() FROM PUBLIC;
