-- The BM25 blocks table's size in pages (as the planner last counted them; 0 before any ANALYZE):
-- below ~1 MB a sequential scan is the right plan for a lexeme's blocks (doctor).
SELECT greatest(c.relpages, 0) FROM pg_class c WHERE c.oid = 'windowrag.bm25_blocks'::regclass
