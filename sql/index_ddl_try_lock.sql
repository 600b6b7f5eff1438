-- Takes this session's turn to build or drop a vector index on windowrag.sentences, without
-- waiting (windowrag_pg.store.collections.index_ddl_turn polls it).
SELECT pg_try_advisory_lock(%s)
