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
