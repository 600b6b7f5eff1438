-- Text of character ranges of documents, each with its position in the arrays given (1-based): a
-- document replaced or deleted since the caller read it has no row, and the others must not
-- shift onto its place.
SELECT r.position, substr(d.text, r.start_char + 1, r.end_char - r.start_char)
FROM unnest(%(documents)s::bigint[], %(starts)s::integer[], %(ends)s::integer[])
     WITH ORDINALITY AS r(doc, start_char, end_char, position)
JOIN windowrag.documents d ON d.id = r.doc
ORDER BY r.position
