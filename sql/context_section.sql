-- The character range of the section holding character %(position)s of a document (the
-- evaluation's wrong_section@1): the section of the stored unit (sentence) that starts there
-- or covers it. No row when the collection has no such document or unit.
SELECT sec.start_char, sec.end_char
FROM windowrag.documents d
JOIN windowrag.sentences s ON s.document_id = d.id
JOIN windowrag.sections sec ON sec.id = s.section_id
WHERE d.collection_id = windowrag.collection_id(%(collection)s)
  AND d.external_id = %(document_id)s
  AND s.start_char <= %(position)s AND %(position)s < s.end_char
ORDER BY s.ordinal
LIMIT 1
