-- Serialises concurrent migrations of one database (held until the migration commits).
SELECT pg_advisory_xact_lock(%s)
