-- Session settings for (or after) an index build: CREATE INDEX CONCURRENTLY cannot run in a
-- transaction block, so these are session SETs that the caller restores, not SET LOCAL.
SELECT set_config('maintenance_work_mem', %s, false), set_config('max_parallel_maintenance_workers', %s, false),
       set_config('statement_timeout', %s, false)
