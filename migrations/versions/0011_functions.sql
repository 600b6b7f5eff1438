-- Frozen by migration 0011 (compact BM25): what it replaces, as 0010 had it — bm25_search
-- reading the postings rows only, and the BM25 trigger functions of 0001 as migration 0003 made
-- them (SECURITY DEFINER, fixed search_path; restated, as CREATE OR REPLACE resets them) — and
-- the function it adds, dropped. 0011's downgrade re-installs this; 0009's and 0010's upgrades
-- lay it over sql/functions.sql so that a database stopped there has what it had. Never edit:
-- the live definitions are in sql/functions.sql.

-- Okapi BM25: score(s) = Σ_t idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|s|/avgdl)),
-- idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))   (the non-negative form used by Lucene).
-- Query terms are OR-ed and counted once. Scores are rounded to 1e-9: a float sum depends on
-- the order of its terms (which the plan decides), and equal scores must compare equal so that
-- the tie-break (sentence id) makes the ranking deterministic.
-- Without a document filter (top-k over the whole collection), two phases bound the work:
-- each query term's strongest postings (impact order; all of them up to per_term_limit, a longer
-- list cut in proportion to the term's idf) give each candidate a lower bound of its
-- score; the shortlist_size best candidates (default max(4·n, 200)) are then scored exactly from
-- their tsvectors. Returned scores are always exact; the ranking can differ from scoring every
-- matching sentence only for sentences the lower bounds left out (docs/performance.md measures
-- it: agreement with exhaustive scoring, and what it costs the hybrid ranking).
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
BEGIN
    PERFORM windowrag.check_search_limits(collection => collection, query_text => query_text, n => n);
    SELECT c.ts_config INTO config FROM windowrag.collections c WHERE c.id = cid;
    lexemes := windowrag.query_lexemes(config, query_text);
    SELECT s.n_sentences, s.total_length::float8 / nullif(s.n_sentences, 0)
      INTO n_sentences, avg_length
      FROM windowrag.bm25_stats s WHERE s.collection_id = cid;
    IF cardinality(lexemes) = 0 OR coalesce(n_sentences, 0) = 0 OR n <= 0 THEN
        RETURN;
    END IF;
    IF document_ids IS NULL THEN
        RETURN QUERY
        WITH terms AS (
            SELECT t.lexeme, t.df, ln(1 + (n_sentences - t.df + 0.5) / (t.df + 0.5)) AS idf
            FROM windowrag.bm25_terms t
            WHERE t.collection_id = cid AND t.lexeme = ANY (lexemes)
        ), q AS (
            -- a term with at most per_term_limit postings is read whole (its part of every score
            -- is then exact); a longer list is cut at a length that follows the term's share of
            -- the score: per_term_limit for the rarest query term, half as many at half its idf
            SELECT terms.lexeme, terms.idf,
                   CASE WHEN terms.df <= per_term_limit THEN terms.df
                        ELSE greatest(n, ceil(per_term_limit * terms.idf / max(terms.idf) OVER ()))::bigint
                   END AS list_length  -- never below n: n matching sentences give n results
            FROM terms
        ), top AS (
            -- phase 1: each term's strongest postings (an index-only scan of bm25_postings_impact,
            -- which INCLUDEs tf and length), with their exact weights ...
            SELECT t.sentence_id,
                   q.idf * windowrag.bm25_term_weight(t.tf, t.doc_length, avg_length, k1, b) AS w
            FROM q CROSS JOIN LATERAL (
                SELECT p.sentence_id, p.tf, p.doc_length FROM windowrag.bm25_postings p
                WHERE p.collection_id = cid AND p.lexeme = q.lexeme
                ORDER BY p.impact DESC
                LIMIT q.list_length) t
        ), shortlist AS (
            -- ... summed into a lower bound of each candidate's score; the best shortlist_size
            -- candidates go on to exact scoring
            SELECT top.sentence_id
            FROM top
            GROUP BY top.sentence_id
            ORDER BY sum(top.w) DESC, top.sentence_id
            LIMIT coalesce(shortlist_size, greatest(4 * n, 200))
        ), scored AS (
            -- phase 2: exact scores from each candidate's own tsvector (one row fetch per
            -- candidate; cheaper than a posting probe per candidate and term on long queries)
            SELECT sl.sentence_id,
                   round(sum(q.idf * windowrag.bm25_term_weight(cardinality(u.positions), s.bm25_length,
                                                                avg_length, k1, b))::numeric, 9)::float8 AS score
            FROM shortlist sl
            JOIN windowrag.sentences s ON s.id = sl.sentence_id
            CROSS JOIN LATERAL unnest(s.tsv) u
            JOIN q ON q.lexeme = u.lexeme
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

CREATE OR REPLACE FUNCTION windowrag.bm25_after_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO windowrag.bm25_stats AS s (collection_id, n_sentences, total_length)
    SELECT collection_id, count(*), sum(bm25_length) FROM new_rows GROUP BY collection_id
    ON CONFLICT (collection_id) DO UPDATE
        SET n_sentences = s.n_sentences + excluded.n_sentences,
            total_length = s.total_length + excluded.total_length;

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
    UPDATE windowrag.bm25_stats s
    SET n_sentences = s.n_sentences - o.n, total_length = s.total_length - o.len
    FROM (SELECT collection_id, count(*) AS n, sum(bm25_length) AS len FROM old_rows GROUP BY 1) o
    WHERE s.collection_id = o.collection_id;

    WITH gone AS (
        SELECT o.collection_id, u.lexeme, count(*) AS n
        FROM old_rows o, unnest(o.tsv) u GROUP BY 1, 2
    )
    UPDATE windowrag.bm25_terms t SET df = t.df - gone.n
    FROM gone WHERE t.collection_id = gone.collection_id AND t.lexeme = gone.lexeme;
    DELETE FROM windowrag.bm25_terms WHERE df <= 0;

    DELETE FROM windowrag.bm25_postings p
    USING (SELECT o.collection_id, u.lexeme, o.id FROM old_rows o, unnest(o.tsv) u) g
    WHERE p.collection_id = g.collection_id AND p.lexeme = g.lexeme AND p.sentence_id = g.id;
    RETURN NULL;
END $$;

DROP FUNCTION IF EXISTS windowrag.bm25_rebuild(integer);
