-- The Python API's query: windowrag.search_windows, with the document filter compiled by
-- windowrag_pg.retrieve.filters into the document_ids argument (NULL when there is no filter).
SELECT segment_rank, document_id, external_id, title, section_path, first_ordinal, last_ordinal,
       start_char, end_char, text, score, token_count, hits
FROM windowrag.search_windows(
    %(collection)s, %(query)s, %(embedding)s,
    k => %(k)s, window_size => %(window)s, mode => %(mode)s, candidates => %(candidates)s,
    clamp => %(clamp)s, rrf_k => %(rrf_k)s, dense_weight => %(dense_weight)s,
    bm25_weight => %(bm25_weight)s, document_ids => {document_ids}, ef_search => %(ef_search)s,
    k1 => %(k1)s, b => %(b)s, max_sentences => %(max_sentences)s)
-- nothing when the collection of that name is not the one the caller read (re-embedded,
-- deleted or made again since): the caller then reads it again (a filter evaluated once,
-- before the search)
WHERE (SELECT c.id FROM windowrag.collections c WHERE c.name = %(collection)s) = %(collection_id)s
