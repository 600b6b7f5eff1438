-- Sections of the documents of one write arrive here by COPY, then go to windowrag.sections with
-- one INSERT ... SELECT. (COPY straight into windowrag.sections would be refused for tenant roles:
-- PostgreSQL does not allow COPY FROM into a table with row-level security, sql/tenancy.sql.)
CREATE TEMP TABLE IF NOT EXISTS windowrag_section_stage (
    document_id    bigint NOT NULL,
    ordinal        integer NOT NULL,
    heading_path   text[] NOT NULL,
    level          smallint NOT NULL,
    start_char     integer NOT NULL,
    end_char       integer NOT NULL,
    first_sentence integer,
    last_sentence  integer
) ON COMMIT DELETE ROWS
