SELECT vector_centre::text FROM windowrag.collections WHERE id = %s
