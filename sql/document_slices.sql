-- Text of character ranges of documents, in the order given.
SELECT substr(d.text, r.start_char + 1, r.end_char - r.start_char)
FROM unnest(%(documents)s::bigint[], %(starts)s::integer[], %(ends)s::integer[])
     WITH ORDINALITY AS r(doc, start_char, end_char, position)
JOIN windowrag.documents d ON d.id = r.doc
ORDER BY r.position
