"""Only the owner creates collections: writers lose INSERT on collections and nextval on its sequence.

Revision ID: 0008
Revises: 0009

The collections' id is an integer: a role that can draw from its sequence can use up its 2^31
values in minutes (sql/owner_provisions_collections.sql). setup_tenancy_roles() keeps it so when
re-run. The downgrade puts 0003's setup_tenancy_roles() back and gives writers the two
privileges back. No table changes, no data.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import load_sql

revision = "0008"
down_revision = "0009"
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
"""


def upgrade() -> None:
    op.execute(load_sql("owner_provisions_collections"))


def downgrade() -> None:
    op.execute(DOWNGRADE)
