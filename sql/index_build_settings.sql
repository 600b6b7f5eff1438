-- The session settings an index build changes (restored after it), and whether maintenance_work_mem
-- is already at least the build's amount (the parameter, e.g. '512MB').
SELECT current_setting('maintenance_work_mem'), current_setting('max_parallel_maintenance_workers'),
       current_setting('statement_timeout'),
       pg_size_bytes(current_setting('maintenance_work_mem')) >= pg_size_bytes(%s)
