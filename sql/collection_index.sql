-- One HNSW index per collection: a partial expression index, because collections may use
-- models of different dimensions in the same sentences table. Queries must use the same
-- expression (embedding::halfvec(dim)) and predicate (collection_id = id) to be served by it.
-- Embeddings are stored as halfvec (migration 0010): half the bytes of vector in the heap and
-- in the index; HNSW on halfvec takes up to 4,000 dimensions (MAX_INDEXED_DIMENSION).
-- {concurrently} is CONCURRENTLY for the build after a bulk load (windowrag_pg.store.collections.
-- build_collection_index: writers of other collections are not blocked) or empty. {key} is
-- embedding::halfvec(dim), minus the collection's centre when it has one (migration 0022:
-- store.collections.index_key; dense_search writes the same expression).
-- m = 24 (pgvector's default is 16): on 100k real sentences the halfvec graph with m = 16 found
-- fewer of the exact top 5 than the vector one did (recall@5 0.93–0.94 against 0.96 at
-- ef_search 100); m = 24 gives 0.97–0.98 for 4% more index bytes (docs/performance.md, halfvec).
CREATE INDEX {concurrently} IF NOT EXISTS {index_name} ON windowrag.sentences
    USING hnsw (({key}) halfvec_cosine_ops) WITH (m = 24)
    WHERE collection_id = {collection_id}
