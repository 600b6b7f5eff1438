-- One HNSW index per collection: a partial expression index, because collections may use
-- models of different dimensions in the same sentences table. Queries must use the same
-- expression (embedding::vector(dim)) and predicate (collection_id = id) to be served by it.
CREATE INDEX IF NOT EXISTS {index_name} ON windowrag.sentences
    USING hnsw ((embedding::vector({dimension})) vector_cosine_ops)
    WHERE collection_id = {collection_id}
