"""Compact BM25 postings: packed in impact-ordered blocks (windowrag.bm25_blocks).

Revision ID: 0011
Revises: 0010

Each term's postings are stored 128 to a row, in impact order (block 0 holds the strongest),
as two arrays (sentence ids, impacts): ~12 bytes a posting instead of a row with two btree
entries (~250 bytes; docs/performance.md measures both). windowrag.bm25_search reads a term's
first blocks as it read the impact index before; scores are still computed exactly from the
candidates' tsvectors. windowrag.bm25_postings stays, for the postings written since the last
pack (incremental ingest); windowrag.bm25_rebuild(collection_id) recounts the statistics and
packs everything (the end of a bulk load, whose triggers defer all BM25 work; store/bm25.py).
search_windows reads each segment's characters and tokens with one range scan of its sentences
(it looked up the first and last sentence apart; the same rows, ~1 ms less at 100k).
bm25_stats gains three counters (postings packed, pending as rows, stale: packed postings of
deleted sentences, which queries skip until the next pack).

The upgrade creates the table (row-level security as the other bm25_* tables), packs every
collection's posting rows as they are (impacts kept) in the migration's transaction, and
installs sql/functions.sql. The postings table keeps its pages for reuse;
`VACUUM FULL windowrag.bm25_postings` returns them to the system.
The downgrade is the exact reverse and loses nothing: the packed postings of live sentences
become rows again (tf and length from the sentence, the impact as packed: the rows the upgrade
packed, exactly), the table and the counters are dropped, and 0010's functions come back
(migrations/versions/0011_functions.sql).
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

CREATE_BLOCKS = """
ALTER TABLE windowrag.bm25_stats
    ADD COLUMN packed_postings bigint NOT NULL DEFAULT 0,
    ADD COLUMN pending_postings bigint NOT NULL DEFAULT 0,
    ADD COLUMN stale_postings bigint NOT NULL DEFAULT 0;
UPDATE windowrag.bm25_stats s SET pending_postings =
    (SELECT count(*) FROM windowrag.bm25_postings p WHERE p.collection_id = s.collection_id);

CREATE TABLE windowrag.bm25_blocks (
    collection_id integer NOT NULL REFERENCES windowrag.collections (id) ON DELETE CASCADE,
    lexeme        text NOT NULL,
    block         integer NOT NULL,  -- 0: the term's strongest postings
    max_impact    real NOT NULL,
    sentence_ids  bigint[] NOT NULL,
    impacts       real[] NOT NULL,   -- descending, parallel to sentence_ids
    PRIMARY KEY (collection_id, lexeme, block)
);
ALTER TABLE windowrag.bm25_blocks ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON windowrag.bm25_blocks
    USING (collection_id = ANY ((SELECT windowrag.visible_collection_ids())::integer[]));
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'windowrag_reader') THEN
        GRANT SELECT ON windowrag.bm25_blocks TO windowrag_reader;
    END IF;
END $$;
"""

# Every collection's posting rows packed as they are (their impacts kept, so that the downgrade
# gives the same rows back), then deleted. Statistics and terms are already exact.
PACK_ROWS = """
INSERT INTO windowrag.bm25_blocks (collection_id, lexeme, block, max_impact, sentence_ids, impacts)
SELECT p.collection_id, p.lexeme, (p.rn - 1) / 128, max(p.impact),
       array_agg(p.sentence_id ORDER BY p.rn), array_agg(p.impact ORDER BY p.rn)
FROM (SELECT collection_id, lexeme, sentence_id, impact,
             row_number() OVER (PARTITION BY collection_id, lexeme ORDER BY impact DESC, sentence_id) AS rn
      FROM windowrag.bm25_postings) p
GROUP BY p.collection_id, p.lexeme, (p.rn - 1) / 128;
UPDATE windowrag.bm25_stats s
SET packed_postings = (SELECT count(*) FROM windowrag.bm25_postings p WHERE p.collection_id = s.collection_id),
    pending_postings = 0;
DELETE FROM windowrag.bm25_postings;
"""

# The packed postings of live sentences back as rows (tf and length from the sentence, the
# impact as packed), beside the rows written since the last pack.
UNPACK_ROWS = """
INSERT INTO windowrag.bm25_postings (collection_id, lexeme, sentence_id, tf, doc_length, impact)
SELECT b.collection_id, b.lexeme, u.sentence_id, cardinality(t.positions), s.bm25_length, u.impact
FROM windowrag.bm25_blocks b
CROSS JOIN LATERAL unnest(b.sentence_ids, b.impacts) u (sentence_id, impact)
JOIN windowrag.sentences s ON s.id = u.sentence_id
CROSS JOIN LATERAL unnest(s.tsv) t
WHERE t.lexeme = b.lexeme;
DROP TABLE windowrag.bm25_blocks;
ALTER TABLE windowrag.bm25_stats
    DROP COLUMN packed_postings, DROP COLUMN pending_postings, DROP COLUMN stale_postings;
"""


def upgrade() -> None:
    op.execute(CREATE_BLOCKS)
    op.execute(PACK_ROWS)
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute(load_frozen_sql("0011_functions"))
    op.execute(UNPACK_ROWS)
