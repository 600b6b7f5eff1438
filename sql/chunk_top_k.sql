-- The chunk baseline of the evaluation: the k best units as they are, no windows, no merging.
SELECT d.id, d.external_id, d.title, s.ordinal, s.start_char, s.end_char, s.text, s.token_count,
       h.rrf_score, h.dense_rank, h.bm25_rank
FROM windowrag.hybrid_search(%(collection)s, %(query)s, %(embedding)s, %(candidates)s, %(mode)s,
                             %(rrf_k)s, 1.0, 1.0, {document_ids}, %(ef_search)s, 1.2, 0.75) h
JOIN windowrag.sentences s ON s.id = h.sentence_id
JOIN windowrag.documents d ON d.id = s.document_id
ORDER BY h.rank
LIMIT %(k)s
