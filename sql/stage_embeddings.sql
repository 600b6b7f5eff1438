-- New embeddings of a collection's sentences arrive here by COPY, then go into the copy of
-- the collection built with them (windowrag_pg/reembed.py); the INSERT rounds them to halfvec.
CREATE TEMP TABLE IF NOT EXISTS windowrag_embedding_stage (
    id        bigint PRIMARY KEY,
    embedding vector NOT NULL
) ON COMMIT DELETE ROWS
