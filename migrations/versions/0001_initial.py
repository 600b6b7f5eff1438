"""Initial schema: collections, documents, sections, sentences and BM25 statistics (sql/schema.sql).

Revision ID: 0001
Revises:
"""
from alembic import op

from windowrag_pg.db.sqlfiles import load_sql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(load_sql("schema"))


def downgrade() -> None:
    # alembic_version lives in this schema too; Alembic recreates it if needed.
    op.execute(
        "DROP TABLE IF EXISTS windowrag.bm25_postings, windowrag.bm25_terms, windowrag.bm25_stats, "
        "windowrag.sentences, windowrag.sections, windowrag.documents, windowrag.collections CASCADE"
    )
    op.execute("DROP FUNCTION IF EXISTS windowrag.bm25_after_insert, windowrag.bm25_after_delete, "
               "windowrag.bm25_term_weight, windowrag.forbid_sentence_update")
