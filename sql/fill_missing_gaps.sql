-- The missing gaps (sql/missing_gaps.sql) read from the stored document text by the rule of
-- windowrag_pg/split/gaps.py: the characters from a sentence's end to the next sentence's start,
-- '' after the document's last (sentences_no_update guards the BM25 columns, not this one).
WITH following AS (
    SELECT s.id, lead(s.start_char) OVER (PARTITION BY s.document_id ORDER BY s.ordinal) AS next_start
    FROM windowrag.sentences s
    WHERE s.document_id IN (SELECT DISTINCT m.document_id FROM windowrag.sentences m WHERE m.gap IS NULL)
)
UPDATE windowrag.sentences s
SET gap = CASE WHEN f.next_start IS NULL THEN ''
               WHEN f.next_start >= s.end_char THEN substr(d.text, s.end_char + 1, f.next_start - s.end_char)
          END
FROM following f, windowrag.documents d
WHERE s.id = f.id AND d.id = s.document_id AND s.gap IS NULL
