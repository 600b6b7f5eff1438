"""The search functions check their arguments; max_sentences cuts a window instead of dropping it.

Revision ID: 0027
Revises: 0026

Found by calling the functions from psql with NULL and out-of-range arguments:
- A NULL k, n, window_size, rrf_k, clamp, mode, candidates, ... silently changed the results
  (every row, scores of 0, windows across sections, hybrid mode): now an error naming them
  (windowrag.check_not_null, SQLSTATE 22004); a NULL collection is named as NULL, not as
  "collection <NULL> does not exist".
- bm25_search's k1 (≥ 0), b (0–1), per_term_limit and shortlist_size (≥ 1), hybrid_search's
  weights (≥ 0, finite), candidate_sentences' radius (0–1000, as the library; its default 6, as
  the library, instead of 5) and sentence_window's clamp are checked (windowrag.check_number);
  an all-zero query embedding is refused (every cosine was NaN).
- search_windows with max_sentences below one window's size skipped the best hits and could
  return nothing; the window is now cut around its hit to what the budget leaves.
- dense_search, bm25_rebuild and bm25_pack_recent put the caller's hnsw.ef_search,
  hnsw.iterative_scan and work_mem back (they lasted until the end of the caller's transaction);
  bm25_write_blocks no longer prints a NOTICE about a missing temporary table.
No table, index or row changes. The upgrade installs the two check functions
(sql/argument_checks.sql) and sql/functions.sql, and runs sql/comments.sql again (corrected
lines); the downgrade re-installs what 0026 had (migrations/versions/0027_functions.sql) and
drops the check functions.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql, load_sql

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(load_sql("argument_checks"))
    for statement in functions_as_of(revision):
        op.execute(statement)
    op.execute(load_sql("comments"))


def downgrade() -> None:
    op.execute(load_frozen_sql("0027_functions"))
    op.execute("DROP FUNCTION windowrag.check_not_null(text, jsonb)")
    op.execute("DROP FUNCTION windowrag.check_number(text, text, double precision, double precision, double precision)")
