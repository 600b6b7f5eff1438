-- One HNSW index per collection: a partial expression index, because collections may use
-- models of different dimensions in the same sentences table. Queries must use the same
-- expression (embedding::halfvec(dim)) and predicate (collection_id = id) to be served by it.
-- Embeddings are stored as halfvec (migration 0010): half the bytes of vector in the heap and
-- in the index; HNSW on halfvec takes up to 4,000 dimensions (MAX_INDEXED_DIMENSION).
CREATE INDEX IF NOT EXISTS {index_name} ON windowrag.sentences
    USING hnsw ((embedding::halfvec({dimension})) halfvec_cosine_ops)
    WHERE collection_id = {collection_id}
