-- Takes off every comment on the windowrag schema's functions, tables and columns: the downgrade
-- of migration 0025, which put them there (sql/comments.sql).
DO $$
DECLARE
    target record;
BEGIN
    FOR target IN
        SELECT p.oid::regprocedure AS name FROM pg_catalog.pg_proc p
        WHERE p.pronamespace = 'windowrag'::regnamespace AND obj_description(p.oid, 'pg_proc') IS NOT NULL
    LOOP
        EXECUTE format('COMMENT ON FUNCTION %s IS NULL', target.name);
    END LOOP;
    FOR target IN
        SELECT c.oid::regclass AS name FROM pg_catalog.pg_class c
        WHERE c.relnamespace = 'windowrag'::regnamespace AND c.relkind = 'r' AND obj_description(c.oid, 'pg_class') IS NOT NULL
    LOOP
        EXECUTE format('COMMENT ON TABLE %s IS NULL', target.name);
    END LOOP;
    FOR target IN
        SELECT a.attrelid::regclass AS name, a.attname FROM pg_catalog.pg_attribute a
        JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
        WHERE c.relnamespace = 'windowrag'::regnamespace AND a.attnum > 0 AND col_description(a.attrelid, a.attnum) IS NOT NULL
    LOOP
        EXECUTE format('COMMENT ON COLUMN %s.%I IS NULL', target.name, target.attname);
    END LOOP;
END $$;
