-- What shapes a stored document's rows besides its metadata: a new version with the same text,
-- format and title only needs its metadata updated (no re-embedding).
SELECT content_hash, text, format, title FROM windowrag.documents
WHERE collection_id = %s AND external_id = %s
