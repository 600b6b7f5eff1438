"""candidate_sentences returns each list item's lead-in and each table row's header.

Revision ID: 0030
Revises: 0029

A Markdown list item or table row is a unit of its own, and the selection sends the runs worth
their tokens: on 40 handbook questions at 700 tokens, 63 of 200 contexts began inside a list,
most without the sentence that introduces it ("The plan does not cover:"), and table rows came
without their header ("| Plus | 90% | $900 |"). windowrag.candidate_sentences now returns, for a
list item, the sentence of its section just before its list (for a nested item, its parent
item), and for a table row below the header, its table's header row (columns lead_ordinal, lead_start_char, lead_end_char,
lead_token_count, lead_gap); a context that starts inside the list or table is sent with its
lead in front (windowrag_pg/segment/select.py prices it). No table, index or row changes. The
result type changes, so the function is dropped and made again: the upgrade installs
sql/functions.sql and runs sql/comments.sql again; the downgrade re-installs 0029's function with
its comment (migrations/versions/0030_functions.sql). A user's view over candidate_sentences
makes Postgres refuse the drop (the upgrade rolls back, nothing changed), as in 0028 and 0029.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql, load_sql

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for statement in functions_as_of(revision):
        op.execute(statement)
    op.execute(load_sql("comments"))


def downgrade() -> None:
    op.execute(load_frozen_sql("0030_functions"))
