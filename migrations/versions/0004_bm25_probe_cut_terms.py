"""BM25 phase 2 probes only cut terms; shortlist_size argument (migrations/versions/0004_functions.sql, frozen).

Revision ID: 0004
Revises: 0003

bm25_search gains an argument (shortlist_size), so its old signature is dropped first: CREATE OR
REPLACE with another argument list would add an overload, and calls that omit the new argument
would become ambiguous. The downgrade drops the new signature and re-installs what 0002
installed (migrations/versions/0002_functions.sql). No table changes.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import load_frozen_sql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

OLD_BM25 = "windowrag.bm25_search(text, text, integer, bigint[], float8, float8, integer)"
NEW_BM25 = "windowrag.bm25_search(text, text, integer, bigint[], float8, float8, integer, integer)"


def upgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {OLD_BM25}")
    op.execute(load_frozen_sql("0004_functions"))


def downgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {NEW_BM25}")
    op.execute(load_frozen_sql("0002_functions"))
