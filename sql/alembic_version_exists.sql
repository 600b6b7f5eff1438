SELECT to_regclass('windowrag.alembic_version') IS NOT NULL
