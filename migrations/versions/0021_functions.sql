-- Frozen by migration 0021 (a recent tier of BM25 blocks, packed apart from the first): what it
-- replaced, bm25_search, bm25_after_delete and bm25_rebuild as 0020 had them. 0021's downgrade
-- runs this (after folding any recent tier into a full pack); the upgrades of 0020 and earlier
-- run it after sql/functions.sql so that a database stopped there has what it had, without the
-- two functions 0021 added. Never edit.
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
                              ELSE least(c.packed, greatest(ceil(c.cut_length * c.packed::float8 / c.df)::bigint, n)) END),
               array_agg(CASE WHEN c.df <= per_term_limit THEN NULL
                              ELSE least(c.df - c.packed, greatest(ceil(c.cut_length * (c.df - c.packed)::float8 / c.df)::bigint, n)) END),
               sum(c.df), sum(CASE WHEN c.df <= per_term_limit THEN c.df ELSE c.cut_length END)
          INTO term_lexemes, term_idfs, term_lengths, term_row_lengths, whole_postings, cut_postings
        FROM (SELECT t.lexeme, t.df, t.idf, least(t.packed_df, t.df)::bigint AS packed,
                     greatest(n, ceil(per_term_limit * t.idf / max(t.idf) OVER ()))::bigint AS cut_length
              FROM (SELECT t.lexeme, t.df, t.packed_df, ln(1 + (n_sentences - t.df + 0.5) / (t.df + 0.5)) AS idf
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
                  FROM unnest(term_lexemes, term_idfs, term_lengths, term_row_lengths) AS q (lexeme, idf, list_length, rows_length)
                  CROSS JOIN LATERAL (
                      (SELECT blk.sentence_ids, blk.tfs, blk.lengths, q.idf FROM windowrag.bm25_blocks blk
                       WHERE blk.collection_id = cid AND blk.lexeme = q.lexeme
                       ORDER BY blk.block
                       LIMIT (q.list_length + 127) / 128)  -- 128 postings a block
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
                    FROM unnest(term_lexemes, term_idfs, term_lengths, term_row_lengths) AS q (lexeme, idf, list_length, rows_length)
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
                            FROM (SELECT blk.sentence_ids, blk.tfs, blk.lengths FROM windowrag.bm25_blocks blk
                                  WHERE blk.collection_id = cid AND blk.lexeme = q.lexeme
                                  ORDER BY blk.block
                                  LIMIT (q.list_length + 127) / 128) bl  -- 128 postings a block
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

CREATE OR REPLACE FUNCTION windowrag.bm25_after_delete() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF current_setting('windowrag.bm25_deferred', true) = 'on' THEN
        RETURN NULL;  -- a bulk load replacing documents: rebuilt at its end
    END IF;
    -- unpacked postings go now; packed ones stay (skipped by queries) and are counted as stale
    -- until the next pack. A lexeme's df counts both; its packed_df only the packed postings of
    -- live sentences (bm25_search shares a cut list between blocks and rows by it).
    WITH removed AS (
        DELETE FROM windowrag.bm25_postings p
        USING (SELECT o.collection_id, u.lexeme, o.id FROM old_rows o, unnest(o.tsv) u) g
        WHERE p.collection_id = g.collection_id AND p.lexeme = g.lexeme AND p.sentence_id = g.id
        RETURNING p.collection_id, p.lexeme
    ), gone_by_lexeme AS (
        SELECT o.collection_id, u.lexeme, count(*) AS n
        FROM old_rows o, unnest(o.tsv) u GROUP BY 1, 2
    ), unpacked_by_lexeme AS (
        SELECT collection_id, lexeme, count(*) AS n FROM removed GROUP BY 1, 2
    ), terms AS (
        UPDATE windowrag.bm25_terms t
        SET df = t.df - g.n, packed_df = greatest(t.packed_df - (g.n - coalesce(u.n, 0)), 0)
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

    -- The blocks go to a temporary table first: CREATE TABLE AS may sort every posting with
    -- parallel workers, INSERT ... SELECT may not (26-35 s against 36-44 s at 1M sentences, the
    -- same blocks; migration 0019, docs/performance.md).
    DROP TABLE IF EXISTS pg_temp.windowrag_packed_blocks;
    CREATE TEMP TABLE windowrag_packed_blocks AS
    SELECT p.lexeme, (p.rn - 1) / 128 AS block, max(p.impact) AS max_impact,
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
          WHERE x.collection_id = cid) p
    GROUP BY p.lexeme, (p.rn - 1) / 128;
    INSERT INTO windowrag.bm25_blocks (collection_id, lexeme, block, max_impact, sentence_ids, tfs, lengths)
    SELECT cid, t.lexeme, t.block, t.max_impact, t.sentence_ids, t.tfs, t.lengths FROM pg_temp.windowrag_packed_blocks t;
    DROP TABLE pg_temp.windowrag_packed_blocks;

    INSERT INTO windowrag.bm25_terms (collection_id, lexeme, df, packed_df)
    SELECT cid, b.lexeme, sum(cardinality(b.sentence_ids)), sum(cardinality(b.sentence_ids))
    FROM windowrag.bm25_blocks b WHERE b.collection_id = cid
    GROUP BY b.lexeme;

    SELECT coalesce(sum(t.df), 0) INTO packed FROM windowrag.bm25_terms t WHERE t.collection_id = cid;
    UPDATE windowrag.bm25_stats s SET packed_postings = packed, pending_postings = 0, stale_postings = 0
    WHERE s.collection_id = cid;
    RETURN packed;
END $$;
REVOKE EXECUTE ON FUNCTION windowrag.bm25_rebuild(integer) FROM PUBLIC;

DROP FUNCTION IF EXISTS windowrag.bm25_pack_recent(integer);
DROP FUNCTION IF EXISTS windowrag.bm25_write_blocks(integer, float8, bigint);
