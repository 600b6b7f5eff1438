-- doctor --recall: sentences of a collection to ask as queries (their own vectors)
SELECT id, embedding::vector FROM windowrag.sentences WHERE collection_id = %s ORDER BY random() LIMIT %s
