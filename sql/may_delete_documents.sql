-- Whether the current role may delete documents (a delete takes the collection's write lock, a
-- row lock that needs UPDATE on collections), and its name: asked before the delete, which a
-- reader role saw fail with "permission denied for table collections".
SELECT has_table_privilege('windowrag.collections', 'UPDATE')
   AND has_table_privilege('windowrag.documents', 'DELETE'), current_user::text
