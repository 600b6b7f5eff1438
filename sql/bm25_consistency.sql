-- BM25 statistics against a full recount from the sentences: one row per collection with the
-- number of mismatches in each table (all zeros = consistent). Postings: each (lexeme,
-- sentence) of the sentences' tsvectors must be stored exactly once, as a row or packed in a
-- block (packed postings of deleted sentences are skipped, as queries skip them), with the
-- right tf and length. A lexeme's packed_df: its packed postings of live sentences; recent_df:
-- those of them in the recent tier (blocks below 0). Each comparison is made once for all
-- collections and grouped (a subquery per collection made it collections × postings: 42 s for
-- 134 collections of 20k sentences in all, 1.5 s grouped).
WITH recount_stats AS (
    SELECT collection_id, count(*) AS n, coalesce(sum(bm25_length), 0) AS len
    FROM windowrag.sentences GROUP BY collection_id
), recount_terms AS (
    SELECT s.collection_id, u.lexeme, count(*) AS df
    FROM windowrag.sentences s, unnest(s.tsv) u GROUP BY 1, 2
), recount_packed AS (
    SELECT b.collection_id, b.lexeme, count(*) AS packed_df, count(*) FILTER (WHERE b.block < 0) AS recent_df
    FROM windowrag.bm25_blocks b, unnest(b.sentence_ids) u (sentence_id)
    WHERE EXISTS (SELECT 1 FROM windowrag.sentences s WHERE s.id = u.sentence_id)
    GROUP BY 1, 2
), recount_postings AS (
    SELECT s.collection_id, u.lexeme, s.id AS sentence_id, cardinality(u.positions) AS tf, s.bm25_length
    FROM windowrag.sentences s, unnest(s.tsv) u
), stored_postings AS (
    SELECT p.collection_id, p.lexeme, p.sentence_id, p.tf, p.doc_length FROM windowrag.bm25_postings p
    UNION ALL
    SELECT b.collection_id, b.lexeme, u.sentence_id, u.tf, u.doc_length
    FROM windowrag.bm25_blocks b, unnest(b.sentence_ids, b.tfs, b.lengths) u (sentence_id, tf, doc_length)
    WHERE EXISTS (SELECT 1 FROM windowrag.sentences s WHERE s.id = u.sentence_id)
), stats_mismatches AS (
    SELECT collection_id, count(*) AS n
    FROM recount_stats r FULL JOIN windowrag.bm25_stats b USING (collection_id)
    WHERE (r.n IS DISTINCT FROM b.n_sentences OR r.len IS DISTINCT FROM b.total_length)
      AND coalesce(b.n_sentences, 0) + coalesce(r.n, 0) > 0
    GROUP BY collection_id
), term_mismatches AS (
    SELECT collection_id, count(*) AS n
    FROM recount_terms r FULL JOIN windowrag.bm25_terms t USING (collection_id, lexeme)
    LEFT JOIN recount_packed k USING (collection_id, lexeme)
    WHERE r.df IS DISTINCT FROM t.df OR coalesce(k.packed_df, 0) IS DISTINCT FROM t.packed_df
       OR coalesce(k.recent_df, 0) IS DISTINCT FROM t.recent_df
    GROUP BY collection_id
), posting_mismatches AS (
    SELECT collection_id, count(*) AS n
    FROM recount_postings r FULL JOIN stored_postings p USING (collection_id, lexeme, sentence_id)
    WHERE r.sentence_id IS NULL OR p.sentence_id IS NULL OR r.tf <> p.tf OR r.bm25_length <> p.doc_length
    GROUP BY collection_id
), duplicate_postings AS (
    SELECT collection_id, count(*) - count(DISTINCT (lexeme, sentence_id)) AS n
    FROM stored_postings GROUP BY collection_id
)
SELECT c.name, coalesce(s.n, 0) AS stats_mismatches, coalesce(t.n, 0) AS term_mismatches,
       coalesce(p.n, 0) + coalesce(d.n, 0) AS posting_mismatches
FROM windowrag.collections c
LEFT JOIN stats_mismatches s ON s.collection_id = c.id
LEFT JOIN term_mismatches t ON t.collection_id = c.id
LEFT JOIN posting_mismatches p ON p.collection_id = c.id
LEFT JOIN duplicate_postings d ON d.collection_id = c.id
ORDER BY c.name
