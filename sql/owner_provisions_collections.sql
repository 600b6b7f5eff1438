-- Only the owner creates collections, version 0008 (applied by
-- migrations/versions/0008_owner_provisions_collections.py).
--
-- Collections are provisioned by the owner (who also creates their HNSW index, which tenant
-- roles cannot). Writers get neither INSERT on collections nor USAGE on its sequence: the id is
-- an integer, and a role that may call nextval() — directly or through failing inserts — can
-- burn its 2^31 values in minutes, after which nobody could create a collection. (The other
-- sequences are bigint: out of reach.) setup_tenancy_roles() of 0003 is kept, renamed, and the
-- new one calls it and then takes these two privileges away, so re-running it stays right.
ALTER FUNCTION windowrag.setup_tenancy_roles() RENAME TO setup_tenancy_roles_0003;
CREATE FUNCTION windowrag.setup_tenancy_roles() RETURNS void
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM windowrag.setup_tenancy_roles_0003();
    IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'windowrag_writer') THEN
        REVOKE INSERT ON windowrag.collections FROM windowrag_writer;
        REVOKE USAGE ON SEQUENCE windowrag.collections_id_seq FROM windowrag_writer;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'windowrag_reader') THEN
        -- granted with ALL FUNCTIONS by the 0003 body, which knows only its own name
        REVOKE EXECUTE ON FUNCTION windowrag.setup_tenancy_roles_0003() FROM windowrag_reader;
    END IF;
END $$;
REVOKE EXECUTE ON FUNCTION windowrag.setup_tenancy_roles(), windowrag.setup_tenancy_roles_0003() FROM PUBLIC;
-- Now only the two revocations (re-running all grants would add explicit grants the downgrade
-- could not tell apart from older ones).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'windowrag_writer') THEN
        REVOKE INSERT ON windowrag.collections FROM windowrag_writer;
        REVOKE USAGE ON SEQUENCE windowrag.collections_id_seq FROM windowrag_writer;
    END IF;
END $$;
