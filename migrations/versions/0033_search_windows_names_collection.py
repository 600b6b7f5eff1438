"""search_windows names a collection that does not exist even when no sentence is visible.

Revision ID: 0033
Revises: 0032

Found by a tester: a tenant service role that had not set windowrag.tenant (so it sees no
collection) got no row from windowrag.search_windows('acme_docs', ...), and so did a misspelt
collection name, where docs/tenancy.md promises "collection 'acme_docs' does not exist"
(SQLSTATE 42704), as bm25_search, hybrid_search, dense_search and candidate_sentences say: its
hits are joined with the sentences the role can see, and with none the executor never ran
hybrid_search, which names the collection. search_windows now names it first (one lookup:
+0.100 ms [-0.036, +0.225] paired median over 300 squad-dev questions against 0032, the same
rows for all; load 2.5, 2026-11-27). No table
changes. The upgrade installs sql/functions.sql and runs sql/comments.sql again; the downgrade re-installs 0032's search_windows
with its comment (migrations/versions/0033_functions.sql).
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql, load_sql

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for statement in functions_as_of(revision):
        op.execute(statement)
    op.execute(load_sql("comments"))  # (sql/functions.sql drops and creates candidate_sentences)


def downgrade() -> None:
    op.execute(load_frozen_sql("0033_functions"))
