"""Ids no tenant can choose: sequence-only ids for roles under RLS, ids never change (sql/tenant_ids.sql).

Revision ID: 0007
Revises: 0006

The downgrade drops the four policies and four triggers it added. No table changes, no data.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import load_sql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

DOWNGRADE = """
DROP TRIGGER collections_fixed_id ON windowrag.collections;
DROP TRIGGER documents_fixed_id ON windowrag.documents;
DROP TRIGGER sections_fixed_id ON windowrag.sections;
DROP TRIGGER sentences_fixed_id ON windowrag.sentences;
DROP POLICY sequence_ids ON windowrag.collections;
DROP POLICY sequence_ids ON windowrag.documents;
DROP POLICY sequence_ids ON windowrag.sections;
DROP POLICY sequence_ids ON windowrag.sentences;
"""


def upgrade() -> None:
    op.execute(load_sql("tenant_ids"))


def downgrade() -> None:
    op.execute(DOWNGRADE)
