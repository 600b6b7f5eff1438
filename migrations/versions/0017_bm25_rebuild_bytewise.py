"""windowrag.bm25_rebuild groups the postings by lexeme bytewise.

Revision ID: 0017
Revises: 0016

bm25_rebuild (the end of every bulk load, doctor --fix, the packing of an incremental ingest's
postings) sorts every posting of the collection by lexeme to pack them into blocks. Under the
database's collation that is a strcoll() per comparison (C.UTF-8 with libc is not treated as
"C"); COLLATE "C" groups the same lexemes with memcmp: the same blocks, and the whole call
4.4-5.0 s -> 3.5-3.6 s at 100k sentences (three alternated runs each; docs/performance.md). The upgrade installs sql/functions.sql; the downgrade
gives back 0013-0016's bm25_rebuild (migrations/versions/0017_functions.sql). No data changes.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute(load_frozen_sql("0017_functions"))
