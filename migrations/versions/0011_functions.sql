-- Frozen by migration 0011 (compact BM25): what it replaces, as 0010 had it — bm25_search
-- reading the postings rows only, search_windows with three lookups per segment, and the BM25
-- trigger functions of 0001 as migration 0003 made
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

-- Windows: each fused hit opens the window [ordinal − window_size, ordinal + window_size],
-- clamped to its section (or document). Walking the hits in fused order, a window that
-- overlaps or touches a segment of the same section (document) merges into it; otherwise it
-- opens a new segment while fewer than k exist. The walk stops at the first hit that would
-- open a (k+1)-th segment, so the hits used are the shortest prefix of the ranking that fills
-- k segments. No sentence is ever in two segments.
CREATE OR REPLACE FUNCTION windowrag.search_windows(
    collection text, query_text text, query_embedding vector,
    k integer DEFAULT 5, window_size integer DEFAULT 3, mode text DEFAULT 'hybrid',
    candidates integer DEFAULT 50, clamp text DEFAULT 'section', rrf_k integer DEFAULT 60,
    dense_weight float8 DEFAULT 1.0, bm25_weight float8 DEFAULT 1.0,
    document_ids bigint[] DEFAULT NULL, ef_search integer DEFAULT 100,
    k1 float8 DEFAULT 1.2, b float8 DEFAULT 0.75, max_sentences integer DEFAULT NULL)
RETURNS TABLE (
    segment_rank integer, document_id bigint, external_id text, title text, section_path text[],
    first_ordinal integer, last_ordinal integer, start_char integer, end_char integer,
    text text, score float8, token_count integer, hits jsonb)
LANGUAGE plpgsql STABLE AS $$
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
    lo integer;
    hi integer;
    grp bigint;
    target integer;
    i integer;
    hit_json jsonb;
    budget integer := coalesce(max_sentences, 2147483647);  -- NULL: no budget
    covered integer := 0;
    new_lo integer;
    new_hi integer;
    absorbed integer;
BEGIN
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
    FOR hit IN
        SELECT h.sentence_id, h.dense_rank, h.bm25_rank, h.rrf_score, s.document_id, s.section_id, s.ordinal,
               CASE WHEN clamp = 'section' THEN sec.first_sentence ELSE 0 END AS bound_lo,
               CASE WHEN clamp = 'section' THEN sec.last_sentence ELSE d.sentence_count - 1 END AS bound_hi
        FROM windowrag.hybrid_search(collection, query_text, query_embedding, candidates, mode, rrf_k,
                                     dense_weight, bm25_weight, document_ids, ef_search, k1, b) h
        JOIN windowrag.sentences s ON s.id = h.sentence_id
        JOIN windowrag.sections sec ON sec.id = s.section_id
        JOIN windowrag.documents d ON d.id = s.document_id
        ORDER BY h.rank
    LOOP
        lo := greatest(hit.ordinal - window_size, hit.bound_lo);
        hi := least(hit.ordinal + window_size, hit.bound_hi);
        grp := CASE WHEN clamp = 'section' THEN hit.section_id ELSE hit.document_id END;
        hit_json := jsonb_build_object('sentence_ordinal', hit.ordinal, 'dense_rank', hit.dense_rank,
                                       'bm25_rank', hit.bm25_rank, 'rrf_score', hit.rrf_score);
        -- What would this window add? The union with the segments it overlaps or touches. With
        -- max_sentences, a window that would take the segments past it is skipped (in short
        -- scoped documents hits keep landing next to each other, and merging them all can
        -- grow one segment to most of the document).
        new_lo := lo;
        new_hi := hi;
        absorbed := 0;
        FOR i IN 1 .. cardinality(seg_lo) LOOP
            IF seg_group[i] = grp AND seg_doc[i] = hit.document_id
               AND seg_lo[i] <= hi + 1 AND lo <= seg_hi[i] + 1 THEN
                new_lo := least(new_lo, seg_lo[i]);
                new_hi := greatest(new_hi, seg_hi[i]);
                absorbed := absorbed + seg_hi[i] - seg_lo[i] + 1;
            END IF;
        END LOOP;
        IF absorbed = 0 AND cardinality(seg_lo) >= k THEN
            EXIT;  -- k segments are full: the walk ends at the first hit that would open another
        END IF;
        IF covered + (new_hi - new_lo + 1) - absorbed > budget AND (new_hi - new_lo + 1) > absorbed THEN
            -- over budget: the hit only counts where a segment already holds its sentence
            FOR i IN 1 .. cardinality(seg_lo) LOOP
                IF seg_group[i] = grp AND seg_doc[i] = hit.document_id
                   AND hit.ordinal BETWEEN seg_lo[i] AND seg_hi[i] THEN
                    seg_hits[i] := seg_hits[i] || hit_json;
                END IF;
            END LOOP;
            CONTINUE;
        END IF;
        covered := covered + (new_hi - new_lo + 1) - absorbed;
        target := NULL;
        i := 1;
        WHILE i <= cardinality(seg_lo) LOOP
            IF seg_group[i] = grp AND seg_doc[i] = hit.document_id
               AND seg_lo[i] <= hi + 1 AND lo <= seg_hi[i] + 1 THEN
                IF target IS NULL THEN
                    target := i;
                    seg_lo[i] := least(seg_lo[i], lo);
                    seg_hi[i] := greatest(seg_hi[i], hi);
                    seg_hits[i] := seg_hits[i] || hit_json;
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
        IF target IS NULL THEN
            EXIT WHEN cardinality(seg_lo) >= k;
            seg_doc := seg_doc || hit.document_id;
            seg_group := seg_group || grp;
            seg_lo := seg_lo || lo;
            seg_hi := seg_hi || hi;
            seg_score := seg_score || hit.rrf_score;
            seg_section := seg_section || hit.section_id;
            seg_hits := seg_hits || jsonb_build_array(hit_json);
        END IF;
    END LOOP;

    RETURN QUERY
    SELECT (row_number() OVER (ORDER BY g.score DESC, g.ord))::integer,
           g.doc, d.external_id, d.title, sec.heading_path, g.lo, g.hi,
           first_s.start_char, last_s.end_char,
           substr(d.text, first_s.start_char + 1, last_s.end_char - first_s.start_char),
           g.score,
           (SELECT sum(s.token_count)::integer FROM windowrag.sentences s
             WHERE s.document_id = g.doc AND s.ordinal BETWEEN g.lo AND g.hi),
           g.hits
    FROM unnest(seg_doc, seg_lo, seg_hi, seg_score, seg_section, seg_hits)
         WITH ORDINALITY AS g(doc, lo, hi, score, section, hits, ord)
    JOIN windowrag.documents d ON d.id = g.doc
    JOIN windowrag.sections sec ON sec.id = g.section
    JOIN windowrag.sentences first_s ON first_s.document_id = g.doc AND first_s.ordinal = g.lo
    JOIN windowrag.sentences last_s ON last_s.document_id = g.doc AND last_s.ordinal = g.hi
    ORDER BY g.score DESC, g.ord;
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
