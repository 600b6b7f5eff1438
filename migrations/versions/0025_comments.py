"""Comments on the schema's functions, tables and offset columns, for psql's \\df+, \\dt+ and \\d+.

Revision ID: 0025
Revises: 0024

The upgrade runs sql/comments.sql; the downgrade takes every comment in the schema off again
(sql/remove_comments.sql). No function, table or row changes. A later migration that changes a
function's arguments runs sql/comments.sql again (COMMENT ON names a function by them).
"""
from alembic import op

from windowrag_pg.db.sqlfiles import load_sql

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(load_sql("comments"))


def downgrade() -> None:
    op.execute(load_sql("remove_comments"))
