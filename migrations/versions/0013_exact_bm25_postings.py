"""Exact BM25 postings: packed postings carry tf and sentence length instead of an impact.

Revision ID: 0013
Revises: 0012

A packed posting was (sentence id, impact), the impact being the term weight at the average
length of the pack: good for ordering, not for scoring, so windowrag.bm25_search re-scored
every shortlisted candidate from its tsvector (a row fetch each). Now bm25_blocks holds
`tfs smallint[]` (a tsvector keeps at most 256 positions per lexeme) and `lengths integer[]`
beside `sentence_ids` (~14 bytes a posting instead of 12), so each posting read adds its exact
part of a score at today's average length and any k1, b; when every query term's list is read
whole the sums are the exact scores and that second phase is skipped. Blocks keep their order
and `max_impact`; the posting rows (bm25_postings) already had tf and length.

The upgrade fills the two arrays from the sentences (a packed posting of a deleted sentence,
which queries skip, gets tf 0 and length 0) and drops the impacts; the rewritten rows leave the
old ones to VACUUM. It installs sql/functions.sql. The downgrade computes the impacts again
(the weight at the collection's present average length, k1 1.2, b 0.75: what 0011's pack
computes), drops the two arrays and re-installs 0012's bm25_search and bm25_rebuild
(migrations/versions/0013_functions.sql). No posting, score or statistic changes either way.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

TF_AND_LENGTH = """
ALTER TABLE windowrag.bm25_blocks
    ADD COLUMN tfs smallint[], ADD COLUMN lengths integer[], DROP COLUMN impacts;
UPDATE windowrag.bm25_blocks b SET tfs = x.tfs, lengths = x.lengths
FROM (SELECT p.collection_id, p.lexeme, p.block,
             array_agg(coalesce(cardinality(t.positions), 0)::smallint ORDER BY u.i) AS tfs,
             array_agg(coalesce(s.bm25_length, 0) ORDER BY u.i) AS lengths
      FROM windowrag.bm25_blocks p
      CROSS JOIN LATERAL unnest(p.sentence_ids) WITH ORDINALITY u (sentence_id, i)
      LEFT JOIN windowrag.sentences s ON s.id = u.sentence_id
      LEFT JOIN LATERAL (SELECT x.positions FROM unnest(s.tsv) x WHERE x.lexeme = p.lexeme) t ON true
      GROUP BY p.collection_id, p.lexeme, p.block) x
WHERE b.collection_id = x.collection_id AND b.lexeme = x.lexeme AND b.block = x.block;
ALTER TABLE windowrag.bm25_blocks ALTER COLUMN tfs SET NOT NULL, ALTER COLUMN lengths SET NOT NULL;
"""

IMPACTS = """
ALTER TABLE windowrag.bm25_blocks ADD COLUMN impacts real[];
UPDATE windowrag.bm25_blocks b
SET impacts = (SELECT array_agg(windowrag.bm25_term_weight(u.tf, u.length, a.avg_length)::real ORDER BY u.i)
               FROM unnest(b.tfs, b.lengths) WITH ORDINALITY u (tf, length, i))
FROM (SELECT c.id AS collection_id,
             coalesce(greatest(s.total_length::float8 / nullif(s.n_sentences, 0), 1.0), 1.0) AS avg_length
      FROM windowrag.collections c LEFT JOIN windowrag.bm25_stats s ON s.collection_id = c.id) a
WHERE a.collection_id = b.collection_id;
ALTER TABLE windowrag.bm25_blocks ALTER COLUMN impacts SET NOT NULL, DROP COLUMN tfs, DROP COLUMN lengths;
"""


def upgrade() -> None:
    op.execute(TF_AND_LENGTH)
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    op.execute(IMPACTS)
    op.execute(load_frozen_sql("0013_functions"))
