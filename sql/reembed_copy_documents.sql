INSERT INTO windowrag.documents (collection_id, external_id, title, source, format, metadata, content_hash,
                                 text, sentence_count, created_at, updated_at)
SELECT %(new_id)s, d.external_id, d.title, d.source, d.format, d.metadata, d.content_hash,
       d.text, d.sentence_count, d.created_at, d.updated_at
FROM windowrag.documents d WHERE d.collection_id = %(collection_id)s
