-- Rows of the documents of one write arrive here by COPY (binary), then go to windowrag.sentences
-- in one INSERT ... SELECT that computes the tsvector and BM25 length in the server. Embeddings
-- arrive as single-precision vectors (numpy arrays); the INSERT rounds them to the column's halfvec.
CREATE TEMP TABLE IF NOT EXISTS windowrag_sentence_stage (
    document_id bigint NOT NULL,
    ordinal     integer NOT NULL,
    section_ord integer NOT NULL,
    start_char  integer NOT NULL,
    end_char    integer NOT NULL,
    kind        text NOT NULL,
    text        text NOT NULL,
    gap         text,
    token_count integer NOT NULL,
    page        integer,
    embedding   vector NOT NULL
) ON COMMIT DELETE ROWS
