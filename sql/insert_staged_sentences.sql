INSERT INTO windowrag.sentences
    (collection_id, document_id, section_id, ordinal, start_char, end_char, kind, text, gap,
     token_count, page, embedding, tsv, bm25_length)
SELECT %(collection_id)s, %(document_id)s, sec.id, st.ordinal, st.start_char, st.end_char, st.kind,
       st.text, st.gap, st.token_count, st.page, st.embedding, v.tsv,
       (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(v.tsv) u)
FROM pg_temp.windowrag_stage st
JOIN windowrag.sections sec ON sec.document_id = %(document_id)s AND sec.ordinal = st.section_ord
CROSS JOIN LATERAL (SELECT to_tsvector(%(ts_config)s::regconfig, st.text) AS tsv) v
ORDER BY st.ordinal
