-- The documents of one write (one or a bulk load's batch), one array element each; returns each
-- new id with its external_id (RETURNING does not promise the input's order).
INSERT INTO windowrag.documents
    (collection_id, external_id, title, source, format, metadata, content_hash, text, sentence_count)
SELECT %(collection_id)s, d.external_id, d.title, d.source, d.format, d.metadata, d.content_hash,
       d.text, d.sentence_count
FROM unnest(%(external_ids)s::text[], %(titles)s::text[], %(sources)s::text[], %(formats)s::text[],
            %(metadata)s::jsonb[], %(content_hashes)s::text[], %(texts)s::text[],
            %(sentence_counts)s::integer[])
     WITH ORDINALITY AS d (external_id, title, source, format, metadata, content_hash, text, sentence_count, i)
ORDER BY d.i
RETURNING id, external_id
