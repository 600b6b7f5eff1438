"""Initial schema: collections, documents, sections, sentences and BM25 statistics (0001_schema.sql,
frozen beside this file).

Revision ID: 0001
Revises:

The downgrade deletes every windowrag table and its rows: when any collection exists it runs
only when confirmed (windowrag_pg/db/data_loss.py) and says what it deletes.
"""
from alembic import op

from windowrag_pg.db.data_loss import guard_data_loss
from windowrag_pg.db.sqlfiles import load_frozen_sql, load_sql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(load_frozen_sql("0001_schema"))


def downgrade() -> None:
    per_collection = [tuple(row) for row in op.get_bind().exec_driver_sql(load_sql("data_loss_counts")).fetchall()]
    guard_data_loss("downgrade below 0001", per_collection)
    # alembic_version lives in this schema too; Alembic recreates it if needed. The kept_* tables
    # hold tenant assignments a downgrade below 0003 kept (0003_tenancy.py): stale without the data.
    op.execute(
        "DROP TABLE IF EXISTS windowrag.bm25_postings, windowrag.bm25_terms, windowrag.bm25_stats, "
        "windowrag.sentences, windowrag.sections, windowrag.documents, windowrag.collections, "
        "windowrag.kept_collection_tenants, windowrag.kept_tenant_roles CASCADE"
    )
    op.execute("DROP FUNCTION IF EXISTS windowrag.bm25_after_insert, windowrag.bm25_after_delete, "
               "windowrag.bm25_term_weight, windowrag.forbid_sentence_update")
