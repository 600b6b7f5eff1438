-- A bulk load's document transaction: the BM25 triggers skip their work (windowrag.bm25_rebuild
-- recounts and packs at the end of the load). Transaction-local.
SELECT set_config('windowrag.bm25_deferred', 'on', true)
