SELECT c.name AS collection,
       c.embedding_model,
       c.dimension,
       c.unit,
       (SELECT count(*) FROM windowrag.documents d WHERE d.collection_id = c.id) AS documents,
       (SELECT count(*) FROM windowrag.sections s JOIN windowrag.documents d ON d.id = s.document_id
         WHERE d.collection_id = c.id) AS sections,
       coalesce(b.n_sentences, 0) AS sentences,
       (SELECT count(*) FROM windowrag.bm25_terms t WHERE t.collection_id = c.id) AS lexemes
FROM windowrag.collections c
LEFT JOIN windowrag.bm25_stats b ON b.collection_id = c.id
ORDER BY c.name
