-- Whether the current role may delete collections (the write lock, a row lock, needs UPDATE on
-- collections; the rows go by DELETE with their cascade), and its name: asked before the delete.
SELECT has_table_privilege('windowrag.collections', 'UPDATE')
   AND has_table_privilege('windowrag.collections', 'DELETE')
   AND has_table_privilege('windowrag.documents', 'DELETE'), current_user::text
