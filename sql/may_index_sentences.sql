-- Whether the current role may create and drop indexes on windowrag.sentences (it owns the table,
-- directly or through a role it belongs to): a bulk load drops and rebuilds a collection's index.
SELECT pg_has_role(current_user, t.relowner, 'USAGE')
FROM pg_class t WHERE t.oid = 'windowrag.sentences'::regclass
