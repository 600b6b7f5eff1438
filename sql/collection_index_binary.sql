-- The HNSW index of a collection with vector_index = 'binary' (migration 0012): over bits of each
-- embedding (binary_quantize), with dense_search re-ranking the ef_search nearest by Hamming
-- distance with the stored halfvec. {key} (store.collections.index_key) is the sign bits of the
-- embedding (0012), of the embedding minus the rows' mean (0022), or (0023, every index built on
-- rows) three bits a dimension, above -spread, 0 and +spread around the mean: 144 bytes at 384-d
-- against 768 for halfvec. Same other placeholders as sql/collection_index.sql.
-- m = 16, ef_construction = 300: on the dev sets' 105k sentences (three bits) recall@5 at
-- ef_search 100 0.989-0.994 and 454 B a row, against 0.981 and 550 B at m = 24 with
-- ef_construction 200, 0.958 at pgvector's 64 (docs/performance.md); the build ~1.7x as long as at 64.
CREATE INDEX {concurrently} IF NOT EXISTS {index_name} ON windowrag.sentences
    USING hnsw (({key}) bit_hamming_ops) WITH (m = 16, ef_construction = 300)
    WHERE collection_id = {collection_id}
