-- The Python API's query for budget-first selection: windowrag.candidate_sentences, with the
-- document filter compiled by windowrag_pg.retrieve.filters into document_ids (NULL: no filter).
SELECT document_id, external_id, title, section_id, section_path, ordinal, start_char, end_char,
       token_count, page, cosine, window_cosine, bm25, matched_terms, matched_idf,
       fused_rank, dense_rank, bm25_rank, rrf_score, query_idf, gap, kind,
       lead_ordinal, lead_start_char, lead_end_char, lead_token_count
FROM windowrag.candidate_sentences(
    %(collection)s, %(query)s, %(embedding)s,
    candidates => %(candidates)s, radius => %(radius)s, mode => %(mode)s, clamp => %(clamp)s,
    rrf_k => %(rrf_k)s, dense_weight => %(dense_weight)s, bm25_weight => %(bm25_weight)s,
    document_ids => {document_ids}, ef_search => %(ef_search)s, k1 => %(k1)s, b => %(b)s)
-- nothing when the collection of that name is not the one the caller read (re-embedded,
-- deleted or made again since): the caller then reads it again (a filter evaluated once,
-- before the search)
WHERE (SELECT c.id FROM windowrag.collections c WHERE c.name = %(collection)s) = %(collection_id)s
