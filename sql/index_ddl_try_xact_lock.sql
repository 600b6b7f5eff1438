-- Behind a transaction pooler: takes the turn to build or drop a vector index on
-- windowrag.sentences, without waiting (windowrag_pg.store.collections.index_ddl_turn polls it),
-- for the rest of this transaction, which a connection of its own keeps open while the build runs
-- on another (a session lock would stay on whichever pooled backend took it). The server's
-- timeouts that would end that idle transaction are turned off for it (transaction_timeout
-- exists from PostgreSQL 17).
SELECT pg_try_advisory_xact_lock(%s),
       (SELECT count(set_config(name, '0', true)) FROM pg_settings
        WHERE name IN ('idle_in_transaction_session_timeout', 'transaction_timeout'))
