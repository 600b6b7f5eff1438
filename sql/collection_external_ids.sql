SELECT external_id FROM windowrag.documents WHERE collection_id = %s
