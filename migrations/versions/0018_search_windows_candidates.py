"""search_windows takes 20 candidates per list by default, as the library does.

Revision ID: 0018
Revises: 0017

`windowrag.search_windows` fused the best 50 sentences of each list (dense, BM25) when called
without `candidates`, while the Python API, the CLI and the evaluation's `windows` preset have
used 20 since an earlier sweep (the same recall on held-out SQuAD questions, fewer tokens on the
contracts). psql users now get what Python users get: on the dev sets the windows preset with 50
candidates scores less than with 20 (SQuAD hit@5 at 700 tokens 0.888 against 0.903, 1,000
questions), and the statement is ~1 ms faster at 100k sentences (docs/performance.md). Only the
parameter's default changes; calls that pass `candidates` are unchanged. The upgrade installs
sql/functions.sql; the downgrade gives back the default of 50
(migrations/versions/0018_functions.sql). No data changes.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute(load_frozen_sql("0018_functions"))
