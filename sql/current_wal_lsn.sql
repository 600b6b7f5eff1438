-- The primary's write position: a replica that has replayed up to it sees every commit made so far.
SELECT pg_current_wal_lsn()
