-- The locking rule: one writing transaction per collection at a time (ingest, replace, delete).
-- It keeps the BM25 statistics updates in one order (no deadlocks) and makes a second writer of
-- the same new document wait and then see the first one's row. Readers never take it.
-- A row lock on the collection, not an advisory lock: under row-level security a role can only
-- lock the collections it can see (and FOR NO KEY UPDATE needs the UPDATE privilege, which
-- read-only roles lack), so no tenant can hold another tenant's writers (docs/tenancy.md).
-- NO KEY: foreign key checks of documents and bm25_stats (FOR KEY SHARE) are not blocked.
SELECT id FROM windowrag.collections WHERE id = %s FOR NO KEY UPDATE
