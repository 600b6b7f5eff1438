SELECT (SELECT e.extversion FROM pg_extension e WHERE e.extname = 'windowrag_native'),
       EXISTS (SELECT 1 FROM pg_available_extensions a WHERE a.name = 'windowrag_native')
