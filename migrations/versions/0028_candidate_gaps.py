"""candidate_sentences returns each sentence's gap, so the selection counts the markup it sends.

Revision ID: 0028
Revises: 0027

A context is the document's own characters from its first sentence to its last, so in Markdown
it also sends what lies between them: list markers, a table's |---| row, raw HTML tags. The
selection counted the sentences alone and the budget was held afterwards by cutting contexts
short (on 40 handbook questions at 700 tokens, 11 were cut). windowrag.candidate_sentences now
returns, per sentence, the text between it and the next sentence of its section when that is
more than whitespace (column `gap`, NULL otherwise; sentences written before 0014 have no stored
gap and give NULL); the pipeline counts its tokens and charges a run for the gaps inside it.
No table, index or row changes. The result type changes, so the function is dropped and made
again: the upgrade installs sql/functions.sql and runs sql/comments.sql again; the downgrade
re-installs 0027's function with its comment (migrations/versions/0028_functions.sql). A user's
view over candidate_sentences makes Postgres refuse the drop (DependentObjectsStillExist; the
upgrade rolls back, nothing changed): not CASCADE, which would drop the view unasked (README,
"Configuration").
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql, load_sql

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for statement in functions_as_of(revision):
        op.execute(statement)
    op.execute(load_sql("comments"))


def downgrade() -> None:
    op.execute(load_frozen_sql("0028_functions"))
