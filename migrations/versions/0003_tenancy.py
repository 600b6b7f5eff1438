"""Multi-tenant isolation: collections.tenant, tenant_roles, roles, row-level security (sql/tenancy.sql).

Revision ID: 0003
Revises: 0002

The downgrade undoes the upgrade exactly and drops no row of the 0002 tables: it removes the
policies, disables RLS, gives the BM25 trigger functions back their SECURITY INVOKER form and
default ACL, revokes what the upgrade granted in this database, drops the triggers and helper
functions it added, windowrag.tenant_roles, sections.collection_id (derived from documents) and
collections.tenant. What only 0003 knew — the tenant of each collection and the role mapping —
is kept in the owner-only tables windowrag.kept_collection_tenants and windowrag.kept_tenant_roles
(a NOTICE counts the rows), and the upgrade puts it back (sql/tenancy_restore.sql): a round trip
keeps every tenant assignment.

The group roles are cluster-wide: they are dropped only when nothing in any database of the
cluster still uses them (no privilege, no owned object, no member) and the migrating role may
drop them; otherwise they stay, with a NOTICE.
"""
from alembic import op

from windowrag_pg.db.sqlfiles import load_sql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TABLES = ("collections", "documents", "sections", "sentences", "bm25_stats", "bm25_terms", "bm25_postings")
ROLES = ("windowrag_service", "windowrag_writer", "windowrag_reader")  # drop order: writer before reader

DOWNGRADE = """
-- Keep what only 0003 knows (each collection's tenant, the role mapping) in owner-only tables
-- that the downgrade leaves behind; the next upgrade to 0003 puts it back (sql/tenancy_restore.sql).
DO $$
DECLARE
    tenants bigint;
    mappings bigint;
BEGIN
    SELECT count(*) INTO tenants FROM windowrag.collections WHERE tenant <> 'default';
    SELECT count(*) INTO mappings FROM windowrag.tenant_roles;
    IF tenants > 0 OR mappings > 0 THEN
        CREATE TABLE windowrag.kept_collection_tenants AS
            SELECT id AS collection_id, name, tenant FROM windowrag.collections WHERE tenant <> 'default';
        CREATE TABLE windowrag.kept_tenant_roles AS SELECT tenant, role_name FROM windowrag.tenant_roles;
        RAISE NOTICE 'windowrag: downgrade below 0003 keeps the tenant of % collection(s) and % tenant_roles '
            'row(s) in windowrag.kept_collection_tenants and windowrag.kept_tenant_roles; the next upgrade '
            'restores them', tenants, mappings;
    END IF;
END $$;

{drop_policies}

ALTER FUNCTION windowrag.bm25_after_insert() SECURITY INVOKER RESET ALL;
ALTER FUNCTION windowrag.bm25_after_delete() SECURITY INVOKER RESET ALL;
-- back to the default ACL {=X/owner, owner=X/owner}, entries in that order
DO $$
DECLARE
    fn regprocedure;
    owner_name name;
BEGIN
    FOREACH fn IN ARRAY ARRAY['windowrag.bm25_after_insert()'::regprocedure, 'windowrag.bm25_after_delete()'::regprocedure] LOOP
        SELECT pg_get_userbyid(p.proowner) INTO owner_name FROM pg_proc p WHERE p.oid = fn;
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM %I', fn, owner_name);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', fn);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', fn, owner_name);
    END LOOP;
END $$;

DO $$
DECLARE
    role_name text;
BEGIN
    FOREACH role_name IN ARRAY ARRAY['windowrag_reader', 'windowrag_writer', 'windowrag_service'] LOOP
        CONTINUE WHEN NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = role_name);
        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA windowrag FROM %I', role_name);
        EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA windowrag FROM %I', role_name);
        EXECUTE format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA windowrag FROM %I', role_name);
        EXECUTE format('REVOKE ALL ON SCHEMA windowrag FROM %I', role_name);
    END LOOP;
END $$;

DROP TRIGGER sections_no_move ON windowrag.sections;
DROP TRIGGER documents_no_move ON windowrag.documents;
DROP TRIGGER sections_collection_id ON windowrag.sections;
DROP FUNCTION windowrag.forbid_moving_rows();
DROP FUNCTION windowrag.section_collection_id();
ALTER TABLE windowrag.sections DROP COLUMN collection_id;
DROP FUNCTION windowrag.setup_tenancy_roles();
DROP FUNCTION windowrag.visible_collection_ids();
DROP FUNCTION windowrag.current_tenants();
DROP FUNCTION windowrag.role_tenants(name);
DROP TABLE windowrag.tenant_roles;
DROP INDEX windowrag.collections_tenant;
ALTER TABLE windowrag.collections DROP COLUMN tenant;

DO $$
DECLARE
    role_name text;
    role_oid oid;
BEGIN
    FOREACH role_name IN ARRAY ARRAY['windowrag_service', 'windowrag_writer', 'windowrag_reader'] LOOP
        SELECT r.oid INTO role_oid FROM pg_roles r WHERE r.rolname = role_name;
        CONTINUE WHEN role_oid IS NULL;
        IF EXISTS (SELECT 1 FROM pg_shdepend d WHERE d.refclassid = 'pg_authid'::regclass AND d.refobjid = role_oid)
           OR EXISTS (SELECT 1 FROM pg_auth_members m WHERE m.roleid = role_oid) THEN
            RAISE NOTICE 'windowrag: role % is still used in this cluster; kept', role_name;
            CONTINUE;
        END IF;
        BEGIN
            EXECUTE format('DROP ROLE %I', role_name);
        EXCEPTION WHEN insufficient_privilege OR dependent_objects_still_exist THEN
            RAISE NOTICE 'windowrag: role % kept (%)', role_name, SQLERRM;
        END;
    END LOOP;
END $$;
"""


def upgrade() -> None:
    op.execute(load_sql("tenancy"))
    op.execute(load_sql("tenancy_restore"))


def downgrade() -> None:
    drop_policies = "\n".join(
        f"DROP POLICY tenant_isolation ON windowrag.{table};\n"
        f"ALTER TABLE windowrag.{table} DISABLE ROW LEVEL SECURITY;"
        for table in TABLES
    )
    op.execute(DOWNGRADE.replace("{drop_policies}", drop_policies))
