-- Frozen by migration 0033 (search_windows names a collection that does not exist, or that the
-- role cannot see, even when no sentence is visible to it): what it replaced, as 0032 had it
-- (with its comment). 0033's downgrade runs this; the upgrades of 0032 and earlier run it after
-- sql/functions.sql so that a database stopped there has what it had. Never edit.

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
COMMENT ON FUNCTION windowrag.search_windows(text, text, vector, integer, integer, text, integer, text, integer,
    double precision, double precision, bigint[], integer, double precision, double precision, integer) IS
'Hybrid search with sentence windows: BM25 and HNSW lists fused by RRF, each hit with its window_size sentences on each side (clamped at the section), overlapping windows merged; one row per window, cited by document, section path (with clamp document, the headings shared by the sections a window runs over) and character offsets into documents.text. Example: SELECT * FROM windowrag.search_windows(''docs'', ''query text'', :''embedding''::vector, k => 5)';
