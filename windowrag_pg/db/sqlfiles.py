"""Load the SQL the library runs from sql/*.sql by name (shipped as windowrag_pg._sql)."""
from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load_sql(name: str) -> str:
    """Text of sql/NAME.sql. Statements may hold psycopg.sql placeholders like {filter}."""
    return resources.files("windowrag_pg._sql").joinpath(f"{name}.sql").read_text(encoding="utf-8")


@cache
def load_frozen_sql(name: str) -> str:
    """Text of migrations/versions/NAME.sql: what a migration installed, frozen beside it so that
    a downgrade re-creates exactly that (sql/ holds only the live definitions)."""
    return resources.files("windowrag_pg._migrations.versions").joinpath(f"{name}.sql").read_text(encoding="utf-8")
