SELECT count(*) FROM windowrag.documents WHERE collection_id = %s
