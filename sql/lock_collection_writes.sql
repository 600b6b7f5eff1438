-- The locking rule: one writing transaction per collection at a time (ingest, replace, delete).
-- It keeps the BM25 statistics updates in one order (no deadlocks) and makes a second writer of
-- the same new document wait and then see the first one's row. Readers never take it.
SELECT pg_advisory_xact_lock(2024061501, %s)
