"""Sentence values for budget-first selection: windowrag.candidate_sentences (sql/functions.sql).

Revision ID: 0006
Revises: 0005

Adds one function: every sentence around the fused hits with its own signals (cosine, cosine of
the sentence with its neighbours, BM25, matched query terms, ranks), which the Python pipeline
turns into values and selects from under a token budget. The other functions are unchanged;
the upgrade installs migrations/versions/0006_functions.sql, the downgrade drops the new function and re-installs what
0005 installed (migrations/versions/0005_functions.sql). No table changes.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import load_frozen_sql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

DROP_NEW = ("DROP FUNCTION IF EXISTS windowrag.candidate_sentences(text, text, vector, integer, integer, text, "
            "text, integer, float8, float8, bigint[], integer, float8, float8)")


def upgrade() -> None:
    op.execute(load_frozen_sql("0006_functions"))


def downgrade() -> None:
    op.execute(DROP_NEW)
    op.execute(load_frozen_sql("0005_functions"))
