INSERT INTO windowrag.sentences
    (collection_id, document_id, section_id, ordinal, start_char, end_char, kind, text, gap,
     token_count, page, embedding, tsv, bm25_length)
SELECT %(collection_id)s, st.document_id, sec.id, st.ordinal, st.start_char, st.end_char, st.kind,
       st.text, st.gap, st.token_count, st.page, st.embedding, v.tsv,
       (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(v.tsv) u)
FROM pg_temp.windowrag_sentence_stage st
JOIN windowrag.sections sec ON sec.document_id = st.document_id AND sec.ordinal = st.section_ord
-- BM25 reads the composed (NFC) form, as windowrag.query_lexemes reads the query: "é" typed as
-- e + a combining accent (text copied on macOS) and "é" are one word (normalize needs a UTF8 server)
CROSS JOIN LATERAL (SELECT to_tsvector(%(ts_config)s::regconfig,
                                       CASE WHEN current_setting('server_encoding') = 'UTF8'
                                            THEN normalize(st.text, NFC) ELSE st.text END) AS tsv) v
ORDER BY st.document_id, st.ordinal
