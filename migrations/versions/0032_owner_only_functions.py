"""Owner-only functions stay the owner's after a restore; dense mode takes a NULL query text; window_size is named.

Revision ID: 0032
Revises: 0031

Found by a tester: after `pg_restore --no-owner --no-acl` every function is executable by PUBLIC,
and the documented `SELECT windowrag.setup_tenancy_roles()` did not take that back from the
SECURITY DEFINER BM25 triggers: a tenant reader attached bm25_after_insert to a temporary table
of its own and rewrote another tenant's BM25 statistics. Re-running setup_tenancy_roles() on a
normal database also granted readers EXECUTE on bm25_rebuild, bm25_write_blocks and
bm25_pack_recent (its grant is ON ALL FUNCTIONS), which no migration did. Two new functions:
windowrag.owner_only_functions() lists, from the catalog, the functions only the owner may run
(every SECURITY DEFINER one but role_tenants, the BM25 rebuilds, the role setup), and
windowrag.revoke_owner_only_functions() takes EXECUTE on them back from PUBLIC and the three
group roles; setup_tenancy_roles() ends with it, `windowrag doctor` flags such a grant and
`doctor --fix` revokes it. The upgrade revokes too (a database restored so and then upgraded).

hybrid_search (so search_windows) with mode => 'dense' took a NULL query_text as an error ("BM25
and the sentence values read the query's words") though dense mode reads no word: it is taken as
no text there (the other modes still refuse it by name). check_search_limits named the window
limit `window`, its Python name: the SQL argument is window_size, and the message says so.

The downgrade re-installs 0031's hybrid_search, check_search_limits and setup_tenancy_roles
(migrations/versions/0032_functions.sql) and drops the two new functions; privileges revoked by
the upgrade stay revoked (no migration granted them). No table changes.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql, load_sql

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(load_sql("limits"))
    for statement in functions_as_of(revision):
        op.execute(statement)
    op.execute(load_sql("comments"))  # (sql/functions.sql drops and creates candidate_sentences)
    op.execute("SELECT windowrag.revoke_owner_only_functions()")


def downgrade() -> None:
    op.execute(load_frozen_sql("0032_functions"))
