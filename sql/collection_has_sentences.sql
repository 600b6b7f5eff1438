-- Whether a collection holds any sentence row (the BM25 counter reads 0 during a bulk load,
-- whose triggers are deferred).
SELECT EXISTS (SELECT 1 FROM windowrag.sentences s WHERE s.collection_id = %s)
