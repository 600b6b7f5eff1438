DELETE FROM windowrag.documents WHERE id = %s
