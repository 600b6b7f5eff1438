-- Ids no tenant can choose, version 0007 (applied by migrations/versions/0007_tenant_ids.py).
--
-- Ids come from one sequence per table, shared by every tenant. A role that could insert a row
-- with an explicit id ahead of the sequence (or move a row's id there) would make another
-- tenant's later insert fail on the primary key when the sequence reaches it. So:
--   * a role under row-level security may insert a row only with the id the table's sequence
--     has just handed to its own session, i.e. the column default. currval() is per session and
--     is read per row, after the row's default was computed: an INSERT … SELECT of many rows
--     passes row by row; an explicit id other than the session's last value is refused. (A value
--     the session got from nextval() and has not used yet is its own: no other session gets it.)
--     RESTRICTIVE: AND-ed with the tenant_isolation policy, never OR-ed. Owners bypass it
--     (restores with explicit ids still work).
--   * nobody changes an id (postings, sections and sentences refer to them; no FK cascades).
CREATE POLICY sequence_ids ON windowrag.collections AS RESTRICTIVE FOR INSERT
    WITH CHECK (id = currval('windowrag.collections_id_seq'::regclass));
CREATE POLICY sequence_ids ON windowrag.documents AS RESTRICTIVE FOR INSERT
    WITH CHECK (id = currval('windowrag.documents_id_seq'::regclass));
CREATE POLICY sequence_ids ON windowrag.sections AS RESTRICTIVE FOR INSERT
    WITH CHECK (id = currval('windowrag.sections_id_seq'::regclass));
CREATE POLICY sequence_ids ON windowrag.sentences AS RESTRICTIVE FOR INSERT
    WITH CHECK (id = currval('windowrag.sentences_id_seq'::regclass));

CREATE TRIGGER collections_fixed_id BEFORE UPDATE OF id ON windowrag.collections
    FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION windowrag.forbid_moving_rows('id');
CREATE TRIGGER documents_fixed_id BEFORE UPDATE OF id ON windowrag.documents
    FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION windowrag.forbid_moving_rows('id');
CREATE TRIGGER sections_fixed_id BEFORE UPDATE OF id ON windowrag.sections
    FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION windowrag.forbid_moving_rows('id');
CREATE TRIGGER sentences_fixed_id BEFORE UPDATE OF id ON windowrag.sentences
    FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION windowrag.forbid_moving_rows('id');

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
