-- The index key functions (sql/create_index_key_function.sql) whose names start with the
-- collection's prefix that no index uses any more: a dropped or replaced index's.
SELECT p.proname
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'windowrag' AND starts_with(p.proname, %s)
  AND NOT EXISTS (SELECT 1 FROM pg_depend d
                  WHERE d.refclassid = 'pg_proc'::regclass AND d.refobjid = p.oid
                    AND d.classid = 'pg_class'::regclass)
ORDER BY 1
