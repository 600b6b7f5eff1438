UPDATE windowrag.documents
SET metadata = %(metadata)s, content_hash = %(content_hash)s, source = %(source)s, updated_at = now()
WHERE id = %(id)s
