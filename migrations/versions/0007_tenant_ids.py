"""Ids no tenant can choose or exhaust (sql/tenant_ids.sql).

Revision ID: 0007
Revises: 0006

Roles under RLS insert only ids their session got from the sequence; ids never change; writers
no longer create collections (no INSERT on collections, no nextval on its int4 sequence), and
setup_tenancy_roles() keeps it so. The downgrade drops the four policies and four triggers,
puts 0003's setup_tenancy_roles() back and gives writers the two privileges back. No table changes, no data.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import load_sql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

DOWNGRADE = """
DROP FUNCTION windowrag.setup_tenancy_roles();
ALTER FUNCTION windowrag.setup_tenancy_roles_0003() RENAME TO setup_tenancy_roles;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'windowrag_writer') THEN
        GRANT INSERT ON windowrag.collections TO windowrag_writer;
        GRANT USAGE ON SEQUENCE windowrag.collections_id_seq TO windowrag_writer;
    END IF;
END $$;
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
