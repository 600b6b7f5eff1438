SELECT lexeme FROM windowrag.bm25_terms WHERE collection_id = %s ORDER BY df DESC LIMIT 1
