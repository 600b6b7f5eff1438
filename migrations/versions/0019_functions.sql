-- Frozen by migration 0019 (bm25_rebuild computes the blocks into a temporary table, where the
-- sort of every posting may run in parallel): what it replaced, bm25_rebuild as 0017-0018 had it
-- (one INSERT ... SELECT). 0019's downgrade runs this; the upgrades of 0017-0018 run it after
-- sql/functions.sql so that a database stopped there has what it had (those of 0009-0016 then
-- run 0017's). Never edit.
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

    INSERT INTO windowrag.bm25_blocks (collection_id, lexeme, block, max_impact, sentence_ids, tfs, lengths)
    SELECT cid, p.lexeme, (p.rn - 1) / 128, max(p.impact),
           array_agg(p.sentence_id ORDER BY p.rn), array_agg(p.tf ORDER BY p.rn), array_agg(p.bm25_length ORDER BY p.rn)
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

    INSERT INTO windowrag.bm25_terms (collection_id, lexeme, df)
    SELECT cid, b.lexeme, sum(cardinality(b.sentence_ids))
    FROM windowrag.bm25_blocks b WHERE b.collection_id = cid
    GROUP BY b.lexeme;

    SELECT coalesce(sum(t.df), 0) INTO packed FROM windowrag.bm25_terms t WHERE t.collection_id = cid;
    UPDATE windowrag.bm25_stats s SET packed_postings = packed, pending_postings = 0, stale_postings = 0
    WHERE s.collection_id = cid;
    RETURN packed;
END $$;
