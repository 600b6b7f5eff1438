-- The stored versions of the documents about to be written, locked for the transaction:
-- external_id, id, content_hash, source.
SELECT external_id, id, content_hash, source FROM windowrag.documents
WHERE collection_id = %s AND external_id = ANY (%s)
FOR UPDATE
