SELECT id, content_hash FROM windowrag.documents
WHERE collection_id = %s AND external_id = %s
FOR UPDATE
