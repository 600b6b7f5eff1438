-- The sentences of the given ranges (document, first ordinal, last ordinal), once each,
-- in document order: what RSE and context assembly work on.
SELECT DISTINCT ON (s.document_id, s.ordinal)
       s.document_id, s.ordinal, s.start_char, s.end_char, s.token_count, s.section_id, s.page
FROM unnest(%(documents)s::bigint[], %(firsts)s::integer[], %(lasts)s::integer[]) AS r(doc, lo, hi)
JOIN windowrag.sentences s ON s.document_id = r.doc AND s.ordinal BETWEEN r.lo AND r.hi
ORDER BY s.document_id, s.ordinal
