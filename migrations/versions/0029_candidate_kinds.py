"""candidate_sentences returns each sentence's kind, so the selection can tell a heading.

Revision ID: 0029
Revises: 0028

A Markdown, HTML, DOCX or PDF heading is stored as a unit of its own (kind 'heading'), and it
matches a query about its section well: its few words are the section's subject. The selection
gave it a value like any sentence, so at small budgets it sent bare headings ("Health insurance",
2 tokens) as contexts of their own, each taking one of the k contexts and telling the reader
nothing the citation's section path does not. windowrag.candidate_sentences now returns each
sentence's kind (column `kind`); the selection gives a heading no value of its own
(windowrag_pg/segment/select.py). No table, index or row changes. The result type changes, so the
function is dropped and made again: the upgrade installs sql/functions.sql and runs
sql/comments.sql again; the downgrade re-installs 0028's function with its comment
(migrations/versions/0029_functions.sql). A user's view over candidate_sentences makes Postgres
refuse the drop (DependentObjectsStillExist; the upgrade rolls back, nothing changed), as in 0028.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql, load_sql

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for statement in functions_as_of(revision):
        op.execute(statement)
    op.execute(load_sql("comments"))


def downgrade() -> None:
    op.execute(load_frozen_sql("0029_functions"))
