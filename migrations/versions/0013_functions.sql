-- Frozen by migration 0013 (exact BM25 postings): what it replaces, as 0012 had it —
-- bm25_search reading impacts from the blocks (phase 2 always), bm25_rebuild packing impacts.
-- 0013's downgrade re-installs this; the upgrades of 0009–0012 lay it over sql/functions.sql so
-- that a database stopped there has what it had. Never edit: the live definitions are in
-- sql/functions.sql.

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
            -- is then exact; the limit, not df, as packed lists may still hold postings of deleted
            -- sentences); a longer list is cut at a length that follows the term's share of the
            -- score: per_term_limit for the rarest query term, half as many at half its idf
            SELECT terms.lexeme, terms.idf,
                   CASE WHEN terms.df <= per_term_limit THEN per_term_limit
                        ELSE greatest(n, ceil(per_term_limit * terms.idf / max(terms.idf) OVER ()))::bigint
                   END AS list_length  -- never below n: n matching sentences give n results
            FROM terms
        ), top AS (
            -- phase 1: each term's strongest postings with their impacts (idf-free BM25 weights
            -- at the average length of when they were stored), read from the term's packed
            -- blocks (impact order: block 0 holds the strongest) and from the postings written
            -- since the last pack ...
            SELECT t.sentence_id, q.idf * t.impact AS w
            FROM q CROSS JOIN LATERAL (
                SELECT x.sentence_id, x.impact FROM (
                    (SELECT p.sentence_id, p.impact FROM windowrag.bm25_postings p
                     WHERE p.collection_id = cid AND p.lexeme = q.lexeme
                     ORDER BY p.impact DESC
                     LIMIT q.list_length)
                    UNION ALL
                    SELECT u.sentence_id, u.impact
                    FROM (SELECT blk.sentence_ids, blk.impacts FROM windowrag.bm25_blocks blk
                          WHERE blk.collection_id = cid AND blk.lexeme = q.lexeme
                          ORDER BY blk.block
                          LIMIT (q.list_length + 127) / 128) bl,  -- 128 postings a block
                         unnest(bl.sentence_ids, bl.impacts) AS u (sentence_id, impact)
                ) x) t  -- (up to 127 postings past list_length from the last block: more candidates, no sort)
        ), shortlist AS (
            -- ... summed into an estimate of each candidate's score (a lower bound up to the drift
            -- of the average length); the best shortlist_size candidates go on to exact scoring.
            -- Packed postings of deleted sentences are still listed until the next pack: the
            -- join with the sentences below drops them.
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

-- Recount a collection's BM25 statistics from its sentences and pack all its postings into
-- blocks, in one transaction holding the collection's write lock (the rule of
-- sql/lock_collection_writes.sql): its writers wait, readers see the old state until commit.
-- The end of a bulk load, and the pack of an incrementally grown collection (store/bm25.py
-- decides when). Returns the number of postings packed. SECURITY INVOKER: only roles that may
-- write bm25_* (the owner) can run it; tenant roles cannot.
CREATE OR REPLACE FUNCTION windowrag.bm25_rebuild(collection_id integer) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    cid integer := bm25_rebuild.collection_id;
    avg_length float8;
    packed bigint;
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

    INSERT INTO windowrag.bm25_blocks (collection_id, lexeme, block, max_impact, sentence_ids, impacts)
    SELECT cid, p.lexeme, (p.rn - 1) / 128, max(p.impact),
           array_agg(p.sentence_id ORDER BY p.rn), array_agg(p.impact ORDER BY p.rn)
    FROM (SELECT u.lexeme, x.id AS sentence_id, w.impact,
                 row_number() OVER (PARTITION BY u.lexeme ORDER BY w.impact DESC, x.id) AS rn
          FROM windowrag.sentences x
          CROSS JOIN LATERAL unnest(x.tsv) u
          CROSS JOIN LATERAL (SELECT windowrag.bm25_term_weight(cardinality(u.positions), x.bm25_length,
                                                                avg_length)::real AS impact) w
          WHERE x.collection_id = cid) p
    GROUP BY p.lexeme, (p.rn - 1) / 128;

    INSERT INTO windowrag.bm25_terms (collection_id, lexeme, df)
    SELECT cid, b.lexeme, sum(cardinality(b.sentence_ids))
    FROM windowrag.bm25_blocks b WHERE b.collection_id = cid
    GROUP BY b.lexeme;

    SELECT coalesce(sum(t.df), 0) INTO packed FROM windowrag.bm25_terms t WHERE t.collection_id = cid;
    UPDATE windowrag.bm25_stats s SET packed_postings = packed, pending_postings = 0, stale_postings = 0
    WHERE s.collection_id = cid;
    RETURN packed;
END $$;
REVOKE EXECUTE ON FUNCTION windowrag.bm25_rebuild(integer) FROM PUBLIC;
