"""A NULL query text or sentence id is refused; a window over several sections is cited by the headings they share.

Revision ID: 0031
Revises: 0030

Found by a tester: windowrag.bm25_search('docs', NULL, 10) returned no row, search_windows and
hybrid_search with a NULL query_text the dense hits alone, sentence_window(NULL, 3) no row,
though the README says arguments passed as NULL are refused by name; windowrag.query_lexemes,
through which BM25 and candidate_sentences read the query's words, now refuses a NULL text, and
sentence_window a NULL sentence_id. With clamp => 'document' a window of search_windows or
sentence_window can run over several sections; it was cited with one of them (the first hit's),
so the citation did not hold the text sent: it now gives the headings those sections share
(windowrag.shared_heading_path, a new function). No table, index or row changes. The upgrade
installs sql/functions.sql and runs sql/comments.sql again; the downgrade re-installs 0030's
three functions with their comments and drops the new one (migrations/versions/0031_functions.sql).
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql, load_sql

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for statement in functions_as_of(revision):
        op.execute(statement)
    op.execute(load_sql("comments"))


def downgrade() -> None:
    op.execute(load_frozen_sql("0031_functions"))
