-- Whether the current role may re-embed a collection, and its name: a re-embed builds a new
-- collection (INSERT on collections, which tenant writers lack: the owner provisions them) and
-- its vector index (the owner of windowrag.sentences). Asked before any embedding: a writer
-- embedded the whole collection before failing on "permission denied for table collections".
SELECT pg_has_role(current_user, t.relowner, 'USAGE') AND has_table_privilege('windowrag.collections', 'INSERT'),
       current_user::text
FROM pg_class t WHERE t.oid = 'windowrag.sentences'::regclass
