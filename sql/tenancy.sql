-- Multi-tenant isolation with row-level security, version 0003
-- (applied by migrations/versions/0003_tenancy.py, which also holds the exact downgrade).
-- How a service uses it: docs/tenancy.md.
--
-- Model
--   * Every collection belongs to one tenant (windowrag.collections.tenant); every other row
--     belongs to the tenant of its collection.
--   * windowrag.current_tenants() is the set of tenants the current role may see:
--       - a member of the group role windowrag_service that has set windowrag.tenant
--         (SET LOCAL windowrag.tenant = 'a' / set_config('windowrag.tenant', 'a', true))
--         sees exactly that tenant;
--       - any other role sees the tenants mapped to the roles it is a member of in
--         windowrag.tenant_roles; windowrag.tenant is ignored for it (no escalation by SET);
--       - a role in neither sees nothing.
--   * RLS policies on every windowrag table filter by it. Table owners and superusers (and
--     BYPASSRLS roles) bypass RLS as Postgres always does: the library's admin connections,
--     the migrations and the BM25 triggers run as the owner. RLS is not FORCEd.
--   * Group roles windowrag_reader (read + search) and windowrag_writer (reader + ingest/delete)
--     carry the table privileges; tenant roles and service roles are made members of them.
--
-- Every helper function pins search_path: their bodies are parsed at run time, and a caller
-- who puts a schema of their own before pg_catalog must not be able to substitute pg_has_role,
-- current_setting or an operator. (Policy expressions are bound at CREATE POLICY time.)

ALTER TABLE windowrag.collections ADD COLUMN tenant text NOT NULL DEFAULT 'default';
CREATE INDEX collections_tenant ON windowrag.collections (tenant);

-- Which (non-service) roles see which tenants. A role sees the tenants of every role it is a
-- member of (pg_has_role ... 'MEMBER'), so mapping a group role covers all its members.
-- Owner-only: other roles learn their own tenants through windowrag.current_tenants().
CREATE TABLE windowrag.tenant_roles (
    tenant    text NOT NULL CHECK (tenant <> ''),
    role_name name NOT NULL,
    PRIMARY KEY (tenant, role_name)
);
CREATE INDEX tenant_roles_role ON windowrag.tenant_roles (role_name);

-- The tenants mapped to TARGET and to every role TARGET is a member of, directly or not (the
-- 'MEMBER' sense of pg_has_role). SECURITY DEFINER, to read tenant_roles; it answers only for a
-- role the session's login role is itself a member of (i.e. could SET ROLE to), so nobody can
-- look up another role's tenants. The memberships are walked from TARGET (a few catalog rows)
-- and tenant_roles is read by index, so the cost does not grow with the number of tenants.
-- Role names are matched through pg_roles: a row naming a dropped role is simply never found.
CREATE FUNCTION windowrag.role_tenants(target name) RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(array_agg(DISTINCT t.tenant ORDER BY t.tenant), '{}'::text[])
    FROM windowrag.tenant_roles t
    WHERE t.role_name = ANY (ARRAY(
        WITH RECURSIVE member_of(role_oid) AS (
            SELECT r.oid FROM pg_catalog.pg_roles r
            WHERE r.rolname = target AND pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER')
            UNION
            SELECT m.roleid FROM pg_catalog.pg_auth_members m JOIN member_of ON m.member = member_of.role_oid
        )
        SELECT r.rolname FROM member_of JOIN pg_catalog.pg_roles r ON r.oid = member_of.role_oid))
$$;

-- The tenants the current role may see (see the model above). STABLE: policies call it once per
-- statement through an InitPlan ((SELECT windowrag.current_tenants())), so a service may switch
-- tenants between statements. SECURITY INVOKER: it must look at the caller's current_user,
-- which inside a SECURITY DEFINER function would be the function's owner.
CREATE FUNCTION windowrag.current_tenants() RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE
        WHEN coalesce(current_setting('windowrag.tenant', true), '') <> ''
             AND coalesce(pg_catalog.pg_has_role(current_user, pg_catalog.to_regrole('windowrag_service'), 'MEMBER'), false)
        THEN ARRAY[current_setting('windowrag.tenant', true)]
        ELSE windowrag.role_tenants(current_user)
    END
$$;

-- The ids of the collections the current role can see: what the policies of the other tables
-- compare collection_id with (one InitPlan per statement, then an integer = ANY per row).
-- SECURITY INVOKER, so the collections policy does the filtering (for a role that bypasses RLS,
-- every collection).
CREATE FUNCTION windowrag.visible_collection_ids() RETURNS integer[]
LANGUAGE sql STABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(array_agg(c.id ORDER BY c.id), '{}'::integer[]) FROM windowrag.collections c
$$;

-- sections get the collection_id of their document, so that their policy is the same cheap
-- comparison as the other tables' (a policy with a sub-query on documents makes the planner
-- join badly: sentence_window took ten times longer). A BEFORE INSERT trigger fills it from the
-- document as the inserting role sees it: a writer naming another tenant's document gets NULL,
-- which the policy refuses. Rows never move: a document keeps its collection and a section its
-- document (the library never updates them; its sentences and BM25 statistics would not follow).
ALTER TABLE windowrag.sections ADD COLUMN collection_id integer;
UPDATE windowrag.sections s SET collection_id = d.collection_id
FROM windowrag.documents d WHERE d.id = s.document_id;
ALTER TABLE windowrag.sections ALTER COLUMN collection_id SET NOT NULL;

CREATE FUNCTION windowrag.section_collection_id() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    NEW.collection_id := (SELECT d.collection_id FROM windowrag.documents d WHERE d.id = NEW.document_id);
    RETURN NEW;
END $$;
CREATE TRIGGER sections_collection_id BEFORE INSERT ON windowrag.sections
    FOR EACH ROW EXECUTE FUNCTION windowrag.section_collection_id();

CREATE FUNCTION windowrag.forbid_moving_rows() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'windowrag: % rows cannot move to another %; delete and ingest again instead',
        TG_TABLE_NAME, TG_ARGV[0] USING ERRCODE = 'feature_not_supported';
END $$;
CREATE TRIGGER documents_no_move BEFORE UPDATE OF collection_id ON windowrag.documents
    FOR EACH ROW WHEN (OLD.collection_id IS DISTINCT FROM NEW.collection_id)
    EXECUTE FUNCTION windowrag.forbid_moving_rows('collection');
CREATE TRIGGER sections_no_move BEFORE UPDATE OF document_id, collection_id ON windowrag.sections
    FOR EACH ROW WHEN (OLD.document_id IS DISTINCT FROM NEW.document_id
                       OR OLD.collection_id IS DISTINCT FROM NEW.collection_id)
    EXECUTE FUNCTION windowrag.forbid_moving_rows('document');

-- Row-level security. One FOR ALL policy per table: USING filters what is read, updated and
-- deleted; WITH CHECK (the same expression unless given) refuses rows written into a tenant
-- the role cannot see. "= ANY ((SELECT f())::integer[])": the scalar sub-select is an InitPlan,
-- evaluated once per statement; the cast keeps it the array form of ANY.
ALTER TABLE windowrag.collections ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON windowrag.collections
    USING (tenant = ANY ((SELECT windowrag.current_tenants())::text[]));

ALTER TABLE windowrag.documents ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON windowrag.documents
    USING (collection_id = ANY ((SELECT windowrag.visible_collection_ids())::integer[]));

ALTER TABLE windowrag.sections ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON windowrag.sections
    USING (collection_id = ANY ((SELECT windowrag.visible_collection_ids())::integer[]));

-- Writes must also be consistent: a sentence of a visible collection may not hang from a
-- document or section of another collection (foreign key checks ignore RLS). The section
-- sub-query runs under the sections policy; its collection_id is its document's.
ALTER TABLE windowrag.sentences ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON windowrag.sentences
    USING (collection_id = ANY ((SELECT windowrag.visible_collection_ids())::integer[]))
    WITH CHECK (collection_id = ANY ((SELECT windowrag.visible_collection_ids())::integer[])
                AND EXISTS (SELECT 1 FROM windowrag.sections sec
                             WHERE sec.id = sentences.section_id
                               AND sec.document_id = sentences.document_id
                               AND sec.collection_id = sentences.collection_id));

ALTER TABLE windowrag.bm25_stats ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON windowrag.bm25_stats
    USING (collection_id = ANY ((SELECT windowrag.visible_collection_ids())::integer[]));

ALTER TABLE windowrag.bm25_terms ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON windowrag.bm25_terms
    USING (collection_id = ANY ((SELECT windowrag.visible_collection_ids())::integer[]));

ALTER TABLE windowrag.bm25_postings ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON windowrag.bm25_postings
    USING (collection_id = ANY ((SELECT windowrag.visible_collection_ids())::integer[]));

-- The BM25 statistics are maintained by the statement triggers on sentences only. They run as
-- the owner (SECURITY DEFINER, fixed search_path), so a tenant writer needs no privilege on
-- bm25_* at all and cannot alter statistics by hand. They only touch the collections of the
-- transition table's rows, which already passed the sentences policy. EXECUTE is revoked from
-- PUBLIC so that nobody can attach these owner-privileged functions to a table of their own
-- (CREATE TRIGGER checks EXECUTE; firing the existing triggers does not).
ALTER FUNCTION windowrag.bm25_after_insert() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION windowrag.bm25_after_delete() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
REVOKE EXECUTE ON FUNCTION windowrag.bm25_after_insert(), windowrag.bm25_after_delete() FROM PUBLIC;

-- Group roles and their privileges. Idempotent; run by the migration, and again by the owner
-- (SELECT windowrag.setup_tenancy_roles()) after a DBA has created the roles when the
-- migrating role lacked CREATEROLE. Roles are cluster-wide; privileges are per database.
CREATE FUNCTION windowrag.setup_tenancy_roles() RETURNS void
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    role_name text;
    can_create boolean;
BEGIN
    SELECT r.rolsuper OR r.rolcreaterole INTO can_create FROM pg_roles r WHERE r.rolname = current_user;
    FOREACH role_name IN ARRAY ARRAY['windowrag_reader', 'windowrag_writer', 'windowrag_service'] LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = role_name);
        IF NOT coalesce(can_create, false) THEN
            RAISE NOTICE 'windowrag: role % does not exist and % lacks CREATEROLE; not created. '
                'Have a DBA create it (CREATE ROLE % NOLOGIN) and run SELECT windowrag.setup_tenancy_roles() '
                'as the schema owner (docs/tenancy.md)', role_name, current_user, role_name;
            CONTINUE;
        END IF;
        BEGIN
            EXECUTE format('CREATE ROLE %I NOLOGIN', role_name);
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- created meanwhile by the migration of another database of the cluster
        END;
    END LOOP;

    IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'windowrag_reader') THEN
        GRANT USAGE ON SCHEMA windowrag TO windowrag_reader;
        -- the data tables (under RLS) and alembic_version (connect() reads it to know the
        -- schema is current); not tenant_roles
        GRANT SELECT ON ALL TABLES IN SCHEMA windowrag TO windowrag_reader;
        REVOKE ALL ON windowrag.tenant_roles FROM windowrag_reader;
        GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA windowrag TO windowrag_reader;
        REVOKE EXECUTE ON FUNCTION windowrag.bm25_after_insert(), windowrag.bm25_after_delete(),
            windowrag.setup_tenancy_roles() FROM windowrag_reader;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'windowrag_writer') THEN
        IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'windowrag_reader') THEN
            BEGIN
                GRANT windowrag_reader TO windowrag_writer;
            EXCEPTION WHEN insufficient_privilege THEN
                RAISE NOTICE 'windowrag: % may not grant windowrag_reader to windowrag_writer; '
                    'a DBA must run GRANT windowrag_reader TO windowrag_writer', current_user;
            END;
        END IF;
        -- no write privilege on bm25_* (triggers), tenant_roles (owner) or alembic_version
        GRANT INSERT, UPDATE, DELETE ON windowrag.collections, windowrag.documents,
            windowrag.sections, windowrag.sentences TO windowrag_writer;
        GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA windowrag TO windowrag_writer;
    END IF;
    -- windowrag_service carries no privilege: it only marks roles trusted to pick a tenant.
END $$;
REVOKE EXECUTE ON FUNCTION windowrag.setup_tenancy_roles() FROM PUBLIC;

SELECT windowrag.setup_tenancy_roles();
