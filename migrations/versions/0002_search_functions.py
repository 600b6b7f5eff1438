"""Retrieval functions: BM25, dense, hybrid (RRF), windows (migrations/versions/0002_functions.sql, frozen).

Revision ID: 0002
Revises: 0001
"""
from alembic import op

from windowrag_pg.db.sqlfiles import load_frozen_sql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

FUNCTIONS = (
    "windowrag.sentence_window(bigint, integer, text)",
    "windowrag.search_windows(text, text, vector, integer, integer, text, integer, text, integer,"
    " float8, float8, bigint[], integer, float8, float8)",
    "windowrag.hybrid_search(text, text, vector, integer, text, integer, float8, float8, bigint[],"
    " integer, float8, float8)",
    "windowrag.dense_search(text, vector, integer, bigint[], integer)",
    "windowrag.bm25_search(text, text, integer, bigint[], float8, float8, integer)",
    "windowrag.query_lexemes(regconfig, text)",
    "windowrag.collection_id(text)",
)


def upgrade() -> None:
    op.execute(load_frozen_sql("0002_functions"))


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS " + ", ".join(FUNCTIONS))
