"""Search limits in SQL (sql/limits.sql), the same as windowrag_pg/limits.py.

Revision ID: 0009
Revises: 0007

windowrag.search_limits() lists the limits; windowrag.check_search_limits(...) raises a message
naming the limit a value breaks, and every retrieval function of sql/functions.sql calls it on
its first line (k, candidates, ef_search ≤ 1000 as pgvector allows, window ≤ 100,
max_sentences ≤ 10,000, queries ≤ 20,000 characters, which keeps full-text matching within the
server's stack). The downgrade re-installs what 0006 installed (migrations/versions/0006_functions.sql) and
drops the two functions. No table changes.

What 0009 installed is sql/functions.sql with the functions later migrations replaced put back
from their frozen copies (0010_functions.sql: dense_search and candidate_sentences on vector
embeddings), so that a database stopped at 0009 has what 0009 had.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql, load_sql

revision = "0009"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(load_sql("limits"))
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute(load_frozen_sql("0006_functions"))
    op.execute("DROP FUNCTION IF EXISTS windowrag.check_search_limits(text, text, integer, integer, integer, integer, "
               "integer, integer, integer)")
    op.execute("DROP FUNCTION IF EXISTS windowrag.search_limits()")
