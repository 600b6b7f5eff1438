"""A recent tier of BM25 blocks: an incremental pack rewrites only what was written since the last
full one.

Revision ID: 0021
Revises: 0020

An incrementally grown collection packed its posting rows by rewriting every posting of the
collection (windowrag.bm25_rebuild: ~30 s at 1M sentences, each time the rows reach 10% of the
packed postings). windowrag.bm25_pack_recent packs only the postings of the sentences written
since the last full pack — the rows and the previous recent tier — into blocks numbered -1, -2,
... (3.5 s at 1M for 10% of its sentences); store/bm25.py packs in full when that tier reaches
half the first one, or when deleted sentences left stale postings. bm25_stats gains
packed_through (the last sentence id of the last full pack, which tells the delete trigger the
tier of a packed posting) and recent_postings; bm25_terms gains recent_df, the live postings of
each lexeme in the recent tier; bm25_search reads the first tier, the recent tier and the rows,
a cut list shared between the three in proportion to what each holds.

The upgrade adds the columns (packed_through: the sentence before the collection's first posting
row, or its last sentence; no recent tier yet) and installs sql/functions.sql. The downgrade
packs in full each collection that has a recent tier, drops the columns, re-installs 0020's
bm25_search, bm25_after_delete and bm25_rebuild and drops windowrag.bm25_pack_recent and
bm25_write_blocks (migrations/versions/0021_functions.sql).
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

RECENT_TIER = """
ALTER TABLE windowrag.bm25_terms ADD COLUMN recent_df integer NOT NULL DEFAULT 0;
ALTER TABLE windowrag.bm25_stats ADD COLUMN recent_postings bigint NOT NULL DEFAULT 0,
                                 ADD COLUMN packed_through bigint;
UPDATE windowrag.bm25_stats s
SET packed_through = coalesce((SELECT min(p.sentence_id) - 1 FROM windowrag.bm25_postings p
                               WHERE p.collection_id = s.collection_id),
                              (SELECT max(x.id) FROM windowrag.sentences x WHERE x.collection_id = s.collection_id))
WHERE s.packed_postings > 0;
"""

FOLD_RECENT_TIERS = """
SELECT windowrag.bm25_rebuild(c.collection_id)
FROM (SELECT DISTINCT b.collection_id FROM windowrag.bm25_blocks b WHERE b.block < 0) c
"""


def upgrade() -> None:
    op.execute(RECENT_TIER)
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute(FOLD_RECENT_TIERS)
    op.execute("ALTER TABLE windowrag.bm25_terms DROP COLUMN recent_df")
    op.execute("ALTER TABLE windowrag.bm25_stats DROP COLUMN recent_postings, DROP COLUMN packed_through")
    op.execute(load_frozen_sql("0021_functions"))  # 0020's functions, and drops the two new ones
