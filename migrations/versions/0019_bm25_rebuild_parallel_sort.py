"""windowrag.bm25_rebuild sorts the postings with parallel workers.

Revision ID: 0019
Revises: 0018

bm25_rebuild (the end of every bulk load, doctor --fix, the pack of an incrementally grown
collection) packed the postings with one INSERT ... SELECT, which PostgreSQL runs without
parallel workers, so the sort of every posting (12.4M at 1M sentences, an external sort) ran in
one process. It now computes the blocks with CREATE TEMP TABLE ... AS, which may use them, and
copies them into bm25_blocks: the same blocks, 26-35 s against 36-44 s at 1M (five alternated
pairs; docs/performance.md). The upgrade installs sql/functions.sql; the downgrade gives back
0017-0018's bm25_rebuild (migrations/versions/0019_functions.sql). No data changes.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute(load_frozen_sql("0019_functions"))
