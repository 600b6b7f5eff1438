-- Sentences without their gap, per collection: stored before migration 0014, or kept through a
-- downgrade below it and an upgrade (the column came back empty). Every sentence written since
-- has one ('' after a document's last), so NULL means missing; candidate_sentences then prices
-- no markup between sentences and search_windows reads the document's text instead.
SELECT c.name, count(*)
FROM windowrag.sentences s
JOIN windowrag.collections c ON c.id = s.collection_id
WHERE s.gap IS NULL
GROUP BY c.name
ORDER BY c.name
