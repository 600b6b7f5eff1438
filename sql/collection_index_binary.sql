-- The HNSW index of a collection with vector_index = 'binary' (migration 0012): over the sign
-- bits of each embedding (binary_quantize: 1 bit a dimension, 48 bytes at 384-d against 768 for
-- halfvec), so the graph is ~40% of the halfvec one; dense_search re-ranks the ef_search nearest
-- by Hamming distance with the stored halfvec (docs/performance.md measures recall and time).
-- Same placeholders as sql/collection_index.sql; {vector} is the embedding itself, or (migration
-- 0022) embedding::halfvec(dim) minus the collection's centre: the bits of the centred vectors.
CREATE INDEX {concurrently} IF NOT EXISTS {index_name} ON windowrag.sentences
    USING hnsw ((binary_quantize({vector})::bit({dimension})) bit_hamming_ops) WITH (m = 24)
    WHERE collection_id = {collection_id}
