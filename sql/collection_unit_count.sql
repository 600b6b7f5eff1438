SELECT count(*) FROM windowrag.sentences WHERE collection_id = %s
