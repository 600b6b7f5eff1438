-- The documents of a collection matching {condition} (windowrag_pg.retrieve.filters), by id.
SELECT d.external_id, d.title, d.source, d.format, d.sentence_count,
       (SELECT count(*) FROM windowrag.sections s WHERE s.document_id = d.id) AS sections,
       d.metadata, d.updated_at
FROM windowrag.documents d
WHERE d.collection_id = %(collection_id)s AND {condition}
ORDER BY d.external_id
LIMIT %(limit)s
