SELECT id, name, embedding_model, dimension, contextual_headers, ts_config::text, unit, chunk_tokens, vector_index
FROM windowrag.collections
WHERE name = %s
