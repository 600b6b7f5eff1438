-- Frozen by migration 0016 (BM25 sums in C when windowrag_native is installed): what it
-- replaced, bm25_search as 0013-0015 had it. 0016's downgrade runs this; the upgrades of
-- 0009-0015 run it after sql/functions.sql so that a database stopped there has what it had.
-- Never edit.
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
-- strongest postings (impact order; in proportion to the term's idf), the sums are lower bounds,
-- and the shortlist_size best candidates (default max(4·n, 200)) are scored exactly from their
-- tsvectors. Returned scores are always exact; the ranking can differ from scoring every
-- matching sentence only when a list was cut (docs/performance.md measures it: agreement with
-- exhaustive scoring, and what it costs the hybrid ranking).
-- With a filter, every matching sentence of those documents is scored exactly (GIN).
CREATE OR REPLACE FUNCTION windowrag.bm25_search(
    collection text, query_text text, n integer DEFAULT 50,
    document_ids bigint[] DEFAULT NULL,
    k1 float8 DEFAULT 1.2, b float8 DEFAULT 0.75, per_term_limit integer DEFAULT 2000,
    shortlist_size integer DEFAULT NULL)
RETURNS TABLE (sentence_id bigint, score float8, rank integer)
LANGUAGE plpgsql STABLE AS $$
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
    exact_sums boolean;
    whole_postings bigint;
    cut_postings bigint;
    -- re-scoring one shortlisted candidate (a row fetch and its tsvector) costs about as much
    -- as reading, weighing and summing this many postings (docs/performance.md, 0013 section)
    rescore_cost CONSTANT integer := 12;
BEGIN
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
        -- below n (n matching sentences give n results).
        SELECT array_agg(c.lexeme), array_agg(c.idf),
               array_agg(CASE WHEN c.df <= per_term_limit THEN NULL ELSE c.cut_length END),
               sum(c.df), sum(CASE WHEN c.df <= per_term_limit THEN c.df ELSE c.cut_length END)
          INTO term_lexemes, term_idfs, term_lengths, whole_postings, cut_postings
        FROM (SELECT t.lexeme, t.df, t.idf,
                     greatest(n, ceil(per_term_limit * t.idf / max(t.idf) OVER ()))::bigint AS cut_length
              FROM (SELECT t.lexeme, t.df, ln(1 + (n_sentences - t.df + 0.5) / (t.df + 0.5)) AS idf
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
        RETURN QUERY
        WITH q AS (
            SELECT t.lexeme, t.idf, CASE WHEN exact_sums THEN NULL ELSE t.list_length END AS list_length
            FROM unnest(term_lexemes, term_idfs, term_lengths) AS t (lexeme, idf, list_length)
        ), top AS (
            -- phase 1: each term's strongest postings, each with its exact part of the score,
            -- read from the term's packed blocks (impact order: block 0 holds the strongest)
            -- and from the postings written since the last pack ...
            SELECT t.sentence_id,
                   q.idf * windowrag.bm25_term_weight(t.tf, t.doc_length, avg_length, k1, b) AS w
            FROM q CROSS JOIN LATERAL (
                SELECT x.sentence_id, x.tf, x.doc_length FROM (
                    (SELECT p.sentence_id, p.tf, p.doc_length FROM windowrag.bm25_postings p
                     WHERE p.collection_id = cid AND p.lexeme = q.lexeme
                     ORDER BY p.impact DESC
                     LIMIT q.list_length)
                    UNION ALL
                    -- unnest in the select list streams the three arrays in step; unnest(a, b, c)
                    -- in FROM would copy each block into a tuplestore first (-14% p50 at 100k)
                    SELECT unnest(bl.sentence_ids), unnest(bl.tfs)::integer, unnest(bl.lengths)
                    FROM (SELECT blk.sentence_ids, blk.tfs, blk.lengths FROM windowrag.bm25_blocks blk
                          WHERE blk.collection_id = cid AND blk.lexeme = q.lexeme
                          ORDER BY blk.block
                          LIMIT (q.list_length + 127) / 128) bl  -- 128 postings a block
                ) x) t  -- (up to 127 postings past list_length from the last block: more candidates, no sort)
        ), shortlist AS (
            -- ... summed per sentence: its exact score when exact_sums, otherwise a lower bound
            -- (the parts of cut lists not read are missing); the best shortlist_size go on.
            -- (Rounded below, not here: float8 -> numeric costs ~1 µs, and there may be
            -- thousands of sums. The shortlist holds the top n by the rounded scores unless
            -- more than shortlist_size - n sums tie with the n-th within 1e-9.)
            SELECT top.sentence_id, sum(top.w) AS w
            FROM top
            GROUP BY top.sentence_id
            ORDER BY sum(top.w) DESC, top.sentence_id
            LIMIT coalesce(shortlist_size, greatest(4 * n, 200))
        ), scored AS (
            SELECT sl.sentence_id, round(sl.w::numeric, 9)::float8 AS score
            FROM shortlist sl
            WHERE exact_sums
            UNION ALL
            -- phase 2: exact scores from each candidate's own tsvector (one row fetch per
            -- candidate; the join also drops packed postings of deleted sentences)
            SELECT sl.sentence_id,
                   round(sum(q.idf * windowrag.bm25_term_weight(cardinality(u.positions), s.bm25_length,
                                                                avg_length, k1, b))::numeric, 9)::float8
            FROM shortlist sl
            JOIN windowrag.sentences s ON s.id = sl.sentence_id
            CROSS JOIN LATERAL unnest(s.tsv) u
            JOIN q ON q.lexeme = u.lexeme
            WHERE NOT exact_sums
            GROUP BY sl.sentence_id
        )
        SELECT sc.sentence_id, sc.score, (row_number() OVER (ORDER BY sc.score DESC, sc.sentence_id))::integer
        FROM scored sc
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
