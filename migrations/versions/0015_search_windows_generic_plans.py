"""Generic plans for search_windows.

Revision ID: 0015
Revises: 0014

In PostgreSQL's default plan_cache_mode, search_windows' two statements (the fused hits with
their windows; the segments' text and offsets) were planned again on every call: the planner
judged a generic plan costlier than one made for the call's values, although both are the same
index probes and range scans. The function now carries `SET plan_cache_mode =
force_generic_plan`: the same rows (compared on 1,320 calls at 100k sentences: hybrid, dense,
BM25, filtered, clamped to documents, with max_sentences), −0.6 to −0.9 ms p50 a call
(docs/performance.md). The upgrade installs sql/functions.sql; the downgrade resets the setting
(migrations/versions/0015_functions.sql), which gives back 0014's search_windows: its body did
not change. No data changes.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute(load_frozen_sql("0015_functions"))
