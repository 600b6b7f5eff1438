SELECT id FROM windowrag.sentences WHERE collection_id = %s
