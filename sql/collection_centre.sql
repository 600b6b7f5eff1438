SELECT vector_centre::text, vector_spread::text FROM windowrag.collections WHERE id = %s
