-- windowrag schema, version 0001, as migrations/versions/0001_initial.py applies it (frozen
-- here beside it: later migrations changed the tables, and bm25_after_insert / bm25_after_delete
-- are live in sql/functions.sql since; windowrag_pg/db/models.py describes the tables at head).
-- Everything lives in the schema "windowrag", beside the users' own tables.
-- Character ranges: start_char/end_char, 0-based, end exclusive, in characters of documents.text.

CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA IF NOT EXISTS windowrag;

CREATE TABLE windowrag.collections (
    id                 serial PRIMARY KEY,
    name               text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
    embedding_model    text NOT NULL,
    dimension          integer NOT NULL CHECK (dimension BETWEEN 1 AND 16000),
    contextual_headers boolean NOT NULL DEFAULT false,
    -- text search configuration used for tsvectors and BM25 queries of this collection
    ts_config          regconfig NOT NULL DEFAULT 'english',
    unit               text NOT NULL DEFAULT 'sentence' CHECK (unit IN ('sentence', 'chunk')),
    chunk_tokens       integer,
    created_at         timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE windowrag.documents (
    id             bigserial PRIMARY KEY,
    collection_id  integer NOT NULL REFERENCES windowrag.collections (id) ON DELETE CASCADE,
    external_id    text NOT NULL,
    title          text,
    source         text,
    format         text NOT NULL,
    metadata       jsonb NOT NULL DEFAULT '{}'::jsonb,
    content_hash   text NOT NULL,
    text           text NOT NULL,
    sentence_count integer NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (collection_id, external_id)
);
CREATE INDEX documents_metadata_gin ON windowrag.documents USING gin (metadata jsonb_path_ops);

CREATE TABLE windowrag.sections (
    id             bigserial PRIMARY KEY,
    document_id    bigint NOT NULL REFERENCES windowrag.documents (id) ON DELETE CASCADE,
    ordinal        integer NOT NULL,
    heading_path   text[] NOT NULL,
    level          smallint NOT NULL,
    start_char     integer NOT NULL,
    end_char       integer NOT NULL,
    -- ordinals (in document) of the first and last sentence: the window clamp bounds
    first_sentence integer,
    last_sentence  integer,
    UNIQUE (document_id, ordinal),
    CHECK (0 <= start_char AND start_char <= end_char)
);

CREATE TABLE windowrag.sentences (
    id            bigserial PRIMARY KEY,
    collection_id integer NOT NULL,
    document_id   bigint NOT NULL REFERENCES windowrag.documents (id) ON DELETE CASCADE,
    section_id    bigint NOT NULL REFERENCES windowrag.sections (id) ON DELETE CASCADE,
    ordinal       integer NOT NULL,          -- position in the document, 0-based
    start_char    integer NOT NULL,
    end_char      integer NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('sentence', 'list_item', 'table_row', 'heading', 'code', 'chunk')),
    text          text NOT NULL,
    token_count   integer NOT NULL,
    page          integer,
    -- no fixed dimension: each collection has its own model; its HNSW index is a partial
    -- expression index on embedding::vector(dim) (see windowrag.ensure_collection_index).
    -- Migration 0010 stores it as halfvec, indexed on embedding::halfvec(dim) (sql/collection_index.sql).
    embedding     vector NOT NULL,
    tsv           tsvector NOT NULL,
    bm25_length   integer NOT NULL,          -- number of lexeme occurrences in tsv (BM25 |d|)
    CHECK (0 <= start_char AND start_char < end_char)
);
CREATE UNIQUE INDEX sentences_document_ordinal ON windowrag.sentences (document_id, ordinal);
CREATE INDEX sentences_section_ordinal ON windowrag.sentences (section_id, ordinal);
CREATE INDEX sentences_tsv_gin ON windowrag.sentences USING gin (tsv);
CREATE INDEX sentences_collection ON windowrag.sentences (collection_id);

-- BM25 statistics, kept exact and transactional by statement-level triggers on sentences.
CREATE TABLE windowrag.bm25_stats (
    collection_id integer PRIMARY KEY REFERENCES windowrag.collections (id) ON DELETE CASCADE,
    n_sentences   bigint NOT NULL DEFAULT 0,
    total_length  bigint NOT NULL DEFAULT 0
);

CREATE TABLE windowrag.bm25_terms (
    collection_id integer NOT NULL,
    lexeme        text NOT NULL,
    df            integer NOT NULL,
    PRIMARY KEY (collection_id, lexeme)
);

-- Postings: one row per (lexeme, sentence). "impact" is the BM25 term weight computed with the
-- average length known at insert time; it only ORDERS postings so that a query can read the
-- strongest postings of a common term first. Scores are always recomputed from exact statistics.
CREATE TABLE windowrag.bm25_postings (
    collection_id integer NOT NULL,
    lexeme        text NOT NULL,
    sentence_id   bigint NOT NULL,
    tf            integer NOT NULL,
    doc_length    integer NOT NULL,
    impact        real NOT NULL,
    PRIMARY KEY (collection_id, lexeme, sentence_id)
);
CREATE INDEX bm25_postings_impact ON windowrag.bm25_postings (collection_id, lexeme, impact DESC)
    INCLUDE (sentence_id, tf, doc_length);

CREATE FUNCTION windowrag.bm25_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO windowrag.bm25_stats AS s (collection_id, n_sentences, total_length)
    SELECT collection_id, count(*), sum(bm25_length) FROM new_rows GROUP BY collection_id
    ON CONFLICT (collection_id) DO UPDATE
        SET n_sentences = s.n_sentences + excluded.n_sentences,
            total_length = s.total_length + excluded.total_length;

    INSERT INTO windowrag.bm25_terms AS t (collection_id, lexeme, df)
    SELECT n.collection_id, u.lexeme, count(*)
    FROM new_rows n, unnest(n.tsv) u
    GROUP BY 1, 2
    ON CONFLICT (collection_id, lexeme) DO UPDATE SET df = t.df + excluded.df;

    INSERT INTO windowrag.bm25_postings (collection_id, lexeme, sentence_id, tf, doc_length, impact)
    SELECT n.collection_id, u.lexeme, n.id, cardinality(u.positions), n.bm25_length,
           windowrag.bm25_term_weight(cardinality(u.positions), n.bm25_length,
                                      greatest(s.total_length::float8 / nullif(s.n_sentences, 0), 1.0))
    FROM new_rows n
    JOIN windowrag.bm25_stats s ON s.collection_id = n.collection_id,
    unnest(n.tsv) u;
    RETURN NULL;
END $$;

CREATE FUNCTION windowrag.bm25_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE windowrag.bm25_stats s
    SET n_sentences = s.n_sentences - o.n, total_length = s.total_length - o.len
    FROM (SELECT collection_id, count(*) AS n, sum(bm25_length) AS len FROM old_rows GROUP BY 1) o
    WHERE s.collection_id = o.collection_id;

    WITH gone AS (
        SELECT o.collection_id, u.lexeme, count(*) AS n
        FROM old_rows o, unnest(o.tsv) u GROUP BY 1, 2
    )
    UPDATE windowrag.bm25_terms t SET df = t.df - gone.n
    FROM gone WHERE t.collection_id = gone.collection_id AND t.lexeme = gone.lexeme;
    DELETE FROM windowrag.bm25_terms WHERE df <= 0;

    DELETE FROM windowrag.bm25_postings p
    USING (SELECT o.collection_id, u.lexeme, o.id FROM old_rows o, unnest(o.tsv) u) g
    WHERE p.collection_id = g.collection_id AND p.lexeme = g.lexeme AND p.sentence_id = g.id;
    RETURN NULL;
END $$;

-- BM25 term weight without IDF: tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avgdl)).
CREATE FUNCTION windowrag.bm25_term_weight(tf integer, doc_length integer, avg_length float8,
                                           k1 float8 DEFAULT 1.2, b float8 DEFAULT 0.75)
RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_length / avg_length))
$$;

CREATE TRIGGER sentences_bm25_insert AFTER INSERT ON windowrag.sentences
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION windowrag.bm25_after_insert();
CREATE TRIGGER sentences_bm25_delete AFTER DELETE ON windowrag.sentences
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION windowrag.bm25_after_delete();
-- Sentences are never updated in place (a changed document is replaced whole); forbid it so
-- that the statistics cannot drift.
CREATE FUNCTION windowrag.forbid_sentence_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'windowrag.sentences rows are immutable: replace the document instead';
END $$;
CREATE TRIGGER sentences_no_update BEFORE UPDATE OF tsv, bm25_length, collection_id ON windowrag.sentences
    FOR EACH ROW EXECUTE FUNCTION windowrag.forbid_sentence_update();
