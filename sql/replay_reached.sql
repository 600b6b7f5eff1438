-- On a streaming replica: has it replayed the WAL up to this position? NULL on a primary.
SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn
