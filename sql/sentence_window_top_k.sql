-- The no-merge sentence-window baseline of the evaluation (what LlamaIndex's
-- SentenceWindowNodeParser + MetadataReplacementPostProcessor send): the k best sentences by
-- cosine, each replaced by its window (clamped at the section), in rank order. Overlapping
-- windows are NOT merged and repeated text is NOT removed: each window is its own context.
SELECT w.document_id, w.external_id, d.title, w.section_path, w.first_ordinal, w.last_ordinal,
       w.start_char, w.end_char, w.text, 1 - h.distance AS similarity, h.rank, s.ordinal
FROM windowrag.dense_search(%(collection)s, %(embedding)s, %(k)s, {document_ids}, %(ef_search)s) h
JOIN windowrag.sentences s ON s.id = h.sentence_id
CROSS JOIN LATERAL windowrag.sentence_window(h.sentence_id, %(window)s, %(clamp)s) w
JOIN windowrag.documents d ON d.id = w.document_id
ORDER BY h.rank
