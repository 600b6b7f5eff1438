DELETE FROM windowrag.documents WHERE id = ANY (%s)
