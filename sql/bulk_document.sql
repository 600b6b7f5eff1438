-- A bulk load's document transaction (windowrag_pg/store/writer.py): the BM25 triggers skip
-- their work (windowrag.bm25_rebuild recounts and packs at the end of the load), and the commit
-- does not wait for its WAL flush (~2 ms a document). The index build that ends the load commits
-- synchronously, which flushes every earlier commit; a server crash before it can lose the last
-- documents reported written (whole, never part of one), which the next ingest writes again.
-- Transaction-local.
SELECT set_config('windowrag.bm25_deferred', 'on', true), set_config('synchronous_commit', 'off', true)
