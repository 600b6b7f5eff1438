"""bm25_terms.packed_df: a cut posting list is read in proportion from blocks and rows.

Revision ID: 0020
Revises: 0019

An incrementally grown collection holds each lexeme's postings in two places until its next
pack: packed blocks and rows (bm25_postings). windowrag.bm25_search cut a long list at the same
length in both, so between packs it read up to twice the postings, half of them as executor
rows: at 1M sentences its BM25 leg took +0.86 ms (p50) with 10% of the postings as rows and
+1.14 ms with 20%. bm25_terms gains packed_df, the packed postings of live sentences of each
lexeme (set by bm25_rebuild, lowered by the delete trigger for packed postings of deleted
sentences); bm25_search shares a cut list's length between the blocks and the rows in proportion
to packed_df and df - packed_df. Lists read whole, and so every exact score, are unchanged.

The upgrade adds the column, fills it from the blocks (live sentences only) and installs
sql/functions.sql; the downgrade drops it and re-installs 0019's bm25_search, bm25_after_delete
and bm25_rebuild (migrations/versions/0020_functions.sql).
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

PACKED_DF = """
ALTER TABLE windowrag.bm25_terms ADD COLUMN packed_df integer NOT NULL DEFAULT 0;
UPDATE windowrag.bm25_terms t SET packed_df = x.n
FROM (SELECT b.collection_id, b.lexeme, count(*) AS n
      FROM windowrag.bm25_blocks b, unnest(b.sentence_ids) u (sentence_id)
      WHERE EXISTS (SELECT 1 FROM windowrag.sentences s WHERE s.id = u.sentence_id)
      GROUP BY 1, 2) x
WHERE t.collection_id = x.collection_id AND t.lexeme = x.lexeme;
"""


def upgrade() -> None:
    op.execute(PACKED_DF)
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute("ALTER TABLE windowrag.bm25_terms DROP COLUMN packed_df")
    op.execute(load_frozen_sql("0020_functions"))
