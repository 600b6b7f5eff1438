-- Takes the turn to build or drop a vector index on windowrag.sentences, without waiting
-- (windowrag_pg.store.collections.index_ddl_turn polls it), for the rest of this transaction,
-- which a connection of its own keeps open while the build runs on another: a lock held by a
-- transaction survives a transaction pooler (a session lock would stay on a pooled backend) and
-- ends with it.
SELECT pg_try_advisory_xact_lock(%s)
