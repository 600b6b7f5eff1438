-- The sentences with their new embeddings (staged by COPY); tsvectors are copied, and the BM25
-- statistics of the copy are built by the insert trigger.
INSERT INTO windowrag.sentences (collection_id, document_id, section_id, ordinal, start_char, end_char, kind,
                                 text, gap, token_count, page, embedding, tsv, bm25_length)
SELECT %(new_id)s, nd.id, nsec.id, s.ordinal, s.start_char, s.end_char, s.kind,
       s.text,
       -- gaps of sentences written before migration 0014 are cut from the document here
       coalesce(s.gap, CASE WHEN nx.start_char IS NULL THEN ''
                            WHEN nx.start_char >= s.end_char THEN substr(od.text, s.end_char + 1, nx.start_char - s.end_char)
                       END),
       s.token_count, s.page, st.embedding, s.tsv, s.bm25_length
FROM windowrag.sentences s
JOIN pg_temp.windowrag_embedding_stage st ON st.id = s.id
JOIN windowrag.documents od ON od.id = s.document_id
JOIN windowrag.documents nd ON nd.collection_id = %(new_id)s AND nd.external_id = od.external_id
JOIN windowrag.sections osec ON osec.id = s.section_id
JOIN windowrag.sections nsec ON nsec.document_id = nd.id AND nsec.ordinal = osec.ordinal
LEFT JOIN windowrag.sentences nx ON nx.document_id = s.document_id AND nx.ordinal = s.ordinal + 1
WHERE s.collection_id = %(collection_id)s
