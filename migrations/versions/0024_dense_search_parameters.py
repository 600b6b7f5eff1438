"""dense_search passes an index's centre and spread as parameters instead of literals.

Revision ID: 0024
Revises: 0023

A centred index (0022) or a three-level binary one (0023) is an expression index whose centre and
spread are literals of the index definition, and dense_search wrote the same literals into each
query so that the planner would match the index: ~3 KB of text a vector, parsed on every query
(two for a centred halfvec index, ten for a three-level binary one). It now passes them as
parameters of its EXECUTE, whose one-shot plan folds them into the same constants, so the index
is still matched (tests/test_centred_index.py reads the plans) without the parsing: dense_search
p50 -16% (halfvec) and -22% (three-level binary) at 100k, the same results (docs/performance.md). No index or row changes.

The upgrade installs sql/functions.sql; the downgrade re-installs 0023's dense_search
(migrations/versions/0024_functions.sql).
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute(load_frozen_sql("0024_functions"))
