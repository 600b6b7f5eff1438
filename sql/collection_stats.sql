SELECT c.name AS collection,
       c.embedding_model,
       c.dimension,
       c.unit,
       (SELECT count(*) FROM windowrag.documents d WHERE d.collection_id = c.id) AS documents,
       (SELECT count(*) FROM windowrag.sections s JOIN windowrag.documents d ON d.id = s.document_id
         WHERE d.collection_id = c.id) AS sections,
       -- rows, as documents and sections are: the BM25 counter (bm25_stats.n_sentences) reads 0 after
       -- a bulk load cut short, before its recount
       (SELECT count(*) FROM windowrag.sentences s WHERE s.collection_id = c.id) AS sentences,
       (SELECT count(*) FROM windowrag.bm25_terms t WHERE t.collection_id = c.id) AS lexemes
FROM windowrag.collections c
ORDER BY c.name
