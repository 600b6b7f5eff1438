INSERT INTO windowrag.documents
    (collection_id, external_id, title, source, format, metadata, content_hash, text, sentence_count)
VALUES (%(collection_id)s, %(external_id)s, %(title)s, %(source)s, %(format)s, %(metadata)s,
        %(content_hash)s, %(text)s, %(sentence_count)s)
RETURNING id
