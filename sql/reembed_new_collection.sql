-- A collection's model move (windowrag_pg/reembed.py) builds a copy of it under a temporary
-- name with the new model, then deletes the original and renames the copy, in one transaction.
INSERT INTO windowrag.collections (name, embedding_model, dimension, contextual_headers, ts_config, unit,
                                   chunk_tokens, tenant, created_at, vector_index)
SELECT %(temporary_name)s, %(model)s, %(dimension)s, c.contextual_headers, c.ts_config, c.unit,
       c.chunk_tokens, c.tenant, c.created_at, c.vector_index
FROM windowrag.collections c WHERE c.id = %(collection_id)s
RETURNING id
