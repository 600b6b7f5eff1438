"""BM25 sums in C when the optional windowrag_native extension is installed.

Revision ID: 0016
Revises: 0015

windowrag.bm25_search's phase 1 (weigh each posting of the query's terms and sum per sentence)
cost ~0.7 µs a posting as SQL rows, most of the BM25 leg; its phase 2 (re-score a cut list's
shortlist from the tsvectors) ~15 µs a candidate at 1M. sql/native/ holds a small C extension:
the aggregate windowrag_native.bm25_sums does phase 1 over whole packed blocks and
windowrag_native.bm25_score phase 2 on a tsvector in place (`windowrag native-install` builds
it with the server's pg_config). bm25_search uses them when the extension exists in the
database and its SQL otherwise: the same postings, the same formula, the same scores
(docs/performance.md). bm25_search also gets generic plans and a smaller rounding margin. The
upgrade creates the extension if the server has it and installs sql/functions.sql; the downgrade
gives back 0015's bm25_search (migrations/versions/0016_functions.sql) and drops the extension.
No data changes.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

CREATE_IF_AVAILABLE = """
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'windowrag_native') THEN
        CREATE EXTENSION IF NOT EXISTS windowrag_native;
    END IF;
END $$;
"""


def upgrade() -> None:
    op.execute(CREATE_IF_AVAILABLE)
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute(load_frozen_sql("0016_functions"))
    op.execute("DROP EXTENSION IF EXISTS windowrag_native")
