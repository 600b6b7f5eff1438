"""dense_search names a NULL query embedding and says how to get one.

Revision ID: 0026
Revises: 0025

A psql user's first hybrid query often passes NULL for the embedding (search_windows('docs',
'question', NULL)); dense_search answered "query embedding has no dimensions". It now says that
the embedding is NULL, that `windowrag embed-query` prints it, and that BM25 alone needs none.
No argument, index or row changes (the function keeps its comment of 0025).

The upgrade installs sql/functions.sql; the downgrade re-installs 0024's dense_search
(migrations/versions/0026_functions.sql).
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute(load_frozen_sql("0026_functions"))
