-- What a collection's sentences were embedded from (the unit, its document's title and section
-- path, for contextual headers); all of them, or those of %(ids)s.
SELECT s.id, s.text, d.title, sec.heading_path
FROM windowrag.sentences s
JOIN windowrag.sections sec ON sec.id = s.section_id
JOIN windowrag.documents d ON d.id = s.document_id
WHERE s.collection_id = %(collection_id)s AND (%(ids)s::bigint[] IS NULL OR s.id = ANY (%(ids)s::bigint[]))
ORDER BY s.id
