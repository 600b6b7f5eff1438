-- A collection-wide rewrite (UPDATE of every sentence, a new HNSW index) may take longer than the
-- statement timeout meant for searches; only for this transaction.
SET LOCAL statement_timeout = 0
