-- What shapes a stored document's rows besides its metadata: a new version with the same text,
-- format and title, cut into the same units and sections, only needs its metadata (and hash)
-- updated, nothing re-embedded. The units and sections are read because a newer parser (or
-- another unit setting) may cut the same text otherwise.
SELECT d.content_hash, d.text, d.format, d.title, d.metadata, d.source,
       (SELECT json_agg(json_build_array(s.start_char, s.end_char, s.kind, c.ordinal, s.page) ORDER BY s.ordinal)
        FROM windowrag.sentences s JOIN windowrag.sections c ON c.id = s.section_id
        WHERE s.document_id = d.id),
       (SELECT json_agg(json_build_array(c.start_char, c.end_char, c.heading_path, c.level) ORDER BY c.ordinal)
        FROM windowrag.sections c WHERE c.document_id = d.id)
FROM windowrag.documents d
WHERE d.collection_id = %s AND d.external_id = %s
