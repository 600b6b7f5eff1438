-- A new collection; an existing one of that name is left as it is (checked by the caller).
INSERT INTO windowrag.collections (name, embedding_model, dimension, contextual_headers, unit, chunk_tokens, tenant,
                                   vector_index)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (name) DO NOTHING
