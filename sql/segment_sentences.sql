-- The sentences of the given ranges (document, first ordinal, last ordinal), once each,
-- in document order, with their section's headings: what RSE and context assembly work on (a
-- part of a window that runs over sections is cited with the headings of its own sentences).
SELECT DISTINCT ON (s.document_id, s.ordinal)
       s.document_id, s.ordinal, s.start_char, s.end_char, s.token_count, s.section_id, s.page, sec.heading_path
FROM unnest(%(documents)s::bigint[], %(firsts)s::integer[], %(lasts)s::integer[]) AS r(doc, lo, hi)
JOIN windowrag.sentences s ON s.document_id = r.doc AND s.ordinal BETWEEN r.lo AND r.hi
JOIN windowrag.sections sec ON sec.id = s.section_id
ORDER BY s.document_id, s.ordinal
