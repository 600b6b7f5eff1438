-- The HNSW index of a collection with vector_index = 'binary' (migration 0012): over bits of each
-- embedding (binary_quantize), with dense_search re-ranking the ef_search nearest by Hamming
-- distance with the stored halfvec. {key} (store.collections.index_key) is the sign bits of the
-- embedding (0012), of the embedding minus the rows' mean (0022), or (0023, every index built on
-- rows) three bits a dimension, above -spread, 0 and +spread around the mean: 144 bytes at 384-d
-- against 768 for halfvec. Same other placeholders as sql/collection_index.sql.
-- m = 16, ef_construction = 128 (pgvector's defaults 16, 64): on the dev sets' 105k sentences
-- (three bits) recall@5 at ef_search 100 0.989 in a scratch table, 0.958 at m = 24 and 64 (0.989
-- at 24 and 128, 550 B a row against 454); ef_construction 200-500 no better, and slower to
-- build and to insert into (docs/performance.md).
CREATE INDEX {concurrently} IF NOT EXISTS {index_name} ON windowrag.sentences
    USING hnsw (({key}) bit_hamming_ops) WITH (m = 16, ef_construction = 128)
    WHERE collection_id = {collection_id}
