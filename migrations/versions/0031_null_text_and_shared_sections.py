"""A NULL query text or sentence id is refused; BM25 reads NFC; a window over sections is cited by what they share.

Revision ID: 0031
Revises: 0030

Found by a tester: windowrag.bm25_search('docs', NULL, 10) returned no row, search_windows and
hybrid_search with a NULL query_text the dense hits alone, sentence_window(NULL, 3) no row,
though the README says arguments passed as NULL are refused by name; windowrag.query_lexemes,
through which BM25 and candidate_sentences read the query's words, now refuses a NULL text, and
sentence_window a NULL sentence_id. With clamp => 'document' a window of search_windows or
sentence_window can run over several sections; it was cited with one of them (the first hit's),
so the citation did not hold the text sent: it now gives the headings those sections share
(windowrag.shared_heading_path, a new function). No table or index changes. The upgrade
installs sql/functions.sql and runs sql/comments.sql again; the downgrade re-installs 0030's
query_lexemes, bm25_search, search_windows and sentence_window with their comments and drops the
new function (migrations/versions/0031_functions.sql).

BM25 reads text in its composed Unicode form (NFC): "é" typed as e + a combining accent (NFD,
text copied on macOS) and "é" were two words, so a query in one form missed sentences stored in
the other. New sentences get tsvectors of their NFC text (sql/insert_staged_sentences.sql) and
query_lexemes and bm25_search's filtered path read the query in NFC; the upgrade recomputes the
tsvectors of stored sentences whose text is not NFC and rebuilds those collections' BM25 (the
stored text keeps its form: offsets into it hold). The downgrade leaves them recomposed (a query
in NFC finds them). Needs a UTF8 server (normalize); on another encoding nothing is recomposed.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql, load_sql

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


# The sentences stored in another form than NFC, their tsvectors read again composed, and their
# collections' BM25 statistics and postings rebuilt from them (sentences are otherwise never
# updated: their trigger is held off for this one statement).
RECOMPOSE_TSVECTORS = """
DO $$
BEGIN
    IF current_setting('server_encoding') <> 'UTF8' THEN
        RETURN;
    END IF;
    CREATE TEMP TABLE windowrag_recomposed ON COMMIT DROP AS
        SELECT DISTINCT s.collection_id FROM windowrag.sentences s WHERE s.text IS NOT NFC NORMALIZED;
    IF NOT EXISTS (SELECT 1 FROM windowrag_recomposed) THEN
        DROP TABLE windowrag_recomposed;
        RETURN;
    END IF;
    ALTER TABLE windowrag.sentences DISABLE TRIGGER sentences_no_update;
    UPDATE windowrag.sentences s
    SET tsv = to_tsvector(c.ts_config, normalize(s.text, NFC)),
        bm25_length = (SELECT coalesce(sum(cardinality(u.positions)), 0)
                       FROM unnest(to_tsvector(c.ts_config, normalize(s.text, NFC))) u)
    FROM windowrag.collections c
    WHERE c.id = s.collection_id AND s.text IS NOT NFC NORMALIZED;
    ALTER TABLE windowrag.sentences ENABLE TRIGGER sentences_no_update;
    PERFORM windowrag.bm25_rebuild(r.collection_id) FROM windowrag_recomposed r;
    DROP TABLE windowrag_recomposed;
END $$
"""


def upgrade() -> None:
    for statement in functions_as_of(revision):
        op.execute(statement)
    op.execute(load_sql("comments"))
    op.execute(RECOMPOSE_TSVECTORS)


def downgrade() -> None:
    op.execute(load_frozen_sql("0031_functions"))
