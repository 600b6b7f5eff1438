-- What a downgrade below 0001 deletes, per collection (migrations/versions/0001_initial.py).
-- Only tables of 0001: it runs after the later revisions were undone.
SELECT c.name,
       (SELECT count(*) FROM windowrag.documents d WHERE d.collection_id = c.id) AS documents,
       (SELECT count(*) FROM windowrag.sentences s WHERE s.collection_id = c.id) AS sentences
FROM windowrag.collections c
ORDER BY c.name
