-- Whether the current role may run doctor --fix: it owns the sentences table (index builds) and
-- may rewrite the BM25 tables.
SELECT pg_has_role((SELECT relowner FROM pg_class WHERE oid = 'windowrag.sentences'::regclass), 'USAGE')
   AND has_table_privilege('windowrag.bm25_blocks', 'DELETE')
