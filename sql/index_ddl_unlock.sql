-- Ends this session's turn to build or drop a vector index on windowrag.sentences.
SELECT pg_advisory_unlock(%s)
