-- Frozen by migration 0031 (a NULL query text or sentence id is refused by name; a query is read
-- in its composed, NFC, form; a window that runs over several sections, clamp 'document', is
-- cited by the headings they share): what it replaced, as 0030 had it, with the comments.
-- 0031's downgrade runs this; the upgrades of 0030 and earlier run it after sql/functions.sql so
-- that a database stopped there has what it had. Never edit.

CREATE OR REPLACE FUNCTION windowrag.query_lexemes(config regconfig, query_text text) RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT l ORDER BY l), '{}')
    FROM unnest(tsvector_to_array(to_tsvector(config, coalesce(query_text, '')))) l
$$;
COMMENT ON FUNCTION windowrag.query_lexemes(regconfig, text) IS
'The distinct lexemes BM25 looks up for a query text under a text search configuration.';


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
              AND s.tsv @@ replace(plainto_tsquery(config, query_text)::text, ' & ', ' | ')::tsquery
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
COMMENT ON FUNCTION windowrag.bm25_search(text, text, integer, bigint[], double precision, double precision,
    integer, integer) IS
'The n best sentences by BM25 (Okapi, k1 and b) over the collection''s postings (packed in bm25_blocks, and rows of bm25_postings written since the last pack); exact scores, those of rank-bm25.';

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
           g.doc, d.external_id, d.title, sec.heading_path, g.lo, g.hi,
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
               bool_and(s.ordinal = g.hi OR s.gap IS NOT NULL) AS gaps_known
        FROM windowrag.sentences s
        WHERE s.document_id = g.doc AND s.ordinal BETWEEN g.lo AND g.hi
        OFFSET 0) w  -- a fence: one range scan per segment, not a join over the document's sentences
    ORDER BY g.score DESC, g.ord;
END $$;
COMMENT ON FUNCTION windowrag.search_windows(text, text, vector, integer, integer, text, integer, text, integer,
    double precision, double precision, bigint[], integer, double precision, double precision, integer) IS
'Hybrid search with sentence windows: BM25 and HNSW lists fused by RRF, each hit with its window_size sentences on each side (clamped at the section), overlapping windows merged; one row per window, cited by document, section path and character offsets into documents.text. Example: SELECT * FROM windowrag.search_windows(''docs'', ''query text'', :''embedding''::vector, k => 5)';


CREATE OR REPLACE FUNCTION windowrag.sentence_window(
    sentence_id bigint, window_size integer DEFAULT 3, clamp text DEFAULT 'section')
RETURNS TABLE (document_id bigint, external_id text, section_path text[], first_ordinal integer,
               last_ordinal integer, start_char integer, end_char integer, text text)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    PERFORM windowrag.check_not_null('sentence_window', jsonb_build_object('window_size', window_size, 'clamp', clamp));
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
    SELECT h.document_id, d.external_id, h.heading_path, h.lo, h.hi, a.start_char, z.end_char,
           substr(d.text, a.start_char + 1, z.end_char - a.start_char)
    FROM hit h
    JOIN windowrag.documents d ON d.id = h.document_id
    JOIN windowrag.sentences a ON a.document_id = h.document_id AND a.ordinal = h.lo
    JOIN windowrag.sentences z ON z.document_id = h.document_id AND z.ordinal = h.hi;
END $$;
COMMENT ON FUNCTION windowrag.sentence_window(bigint, integer, text) IS
'The window of one sentence: window_size sentences on each side, clamped at its section (clamp section) or document; section_path is the sentence''s own section.';

-- 0031 added this; 0030 had no such function
DROP FUNCTION IF EXISTS windowrag.shared_heading_path(bigint, integer, integer);
