-- The owner-only functions (windowrag.owner_only_functions(), migration 0032) that PUBLIC or a
-- windowrag_* group role may execute, and who may: a restore without privileges (pg_restore
-- --no-acl) leaves every function to PUBLIC, a grant ON ALL FUNCTIONS reaches them too.
SELECT f::text AS function_name,
       array_agg(CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee)::text END
                 ORDER BY a.grantee <> 0, pg_get_userbyid(a.grantee)) AS grantees
FROM windowrag.owner_only_functions() f
JOIN pg_proc p ON p.oid = f
CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
WHERE a.privilege_type = 'EXECUTE'
  AND (a.grantee = 0 OR pg_get_userbyid(a.grantee) IN ('windowrag_reader', 'windowrag_writer', 'windowrag_service'))
GROUP BY f
ORDER BY 1
