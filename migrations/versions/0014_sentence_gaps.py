"""Sentence gaps: each sentence keeps the document's characters between it and the next one.

Revision ID: 0014
Revises: 0013

windowrag.search_windows cut each segment's text out of the document's text: a compressed
(TOAST) value, decompressed from its start up to the segment for each of the k segments, the
largest single cost of the windows step (docs/performance.md). With `sentences.gap` (the
characters from a sentence's end to the next sentence's start: whitespace, Markdown markup),
a segment's text is its sentences and their gaps, read by the range scan that already reads
their offsets: the same characters.

The upgrade adds the column, NULL for the sentences already stored (filling it would rewrite
every sentence row and its index entries); search_windows reads the document's text for any
segment with a missing gap, as before, so nothing changes for them until their documents are
written again (a changed document, `windowrag reembed`). It installs sql/functions.sql. The
downgrade re-installs 0013's search_windows (migrations/versions/0014_functions.sql) and drops
the column: the gaps are copies of the documents' text, so nothing is lost.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE windowrag.sentences ADD COLUMN gap text")
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute(load_frozen_sql("0014_functions"))
    op.execute("ALTER TABLE windowrag.sentences DROP COLUMN gap")
