"""Window sentence budget; faster BM25 top-k (migrations/versions/0005_functions.sql, frozen).

Revision ID: 0005
Revises: 0004

search_windows gains max_sentences (default NULL: no budget): a hit whose window would take the
segments past it is skipped. bm25_search (same arguments) cuts long posting lists in
proportion to the term's idf (per_term_limit now 2000 for the rarest term), keeps a shortlist of
max(4·n, 200) and scores it exactly from the sentences' tsvectors (docs/performance.md). Its old signature is dropped first (CREATE OR REPLACE with
another argument list would add an ambiguous overload). The downgrade re-installs what 0004
installed (migrations/versions/0004_functions.sql). No table changes.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import load_frozen_sql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

ARGUMENTS = ("text, text, vector, integer, integer, text, integer, text, integer, float8, float8, bigint[], "
             "integer, float8, float8")
OLD = f"windowrag.search_windows({ARGUMENTS})"
NEW = f"windowrag.search_windows({ARGUMENTS}, integer)"


def upgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {OLD}")
    op.execute(load_frozen_sql("0005_functions"))


def downgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {NEW}")
    op.execute(load_frozen_sql("0004_functions"))
