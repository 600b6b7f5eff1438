"""Load the SQL the library runs from sql/*.sql by name (shipped as windowrag_pg._sql)."""
from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load_sql(name: str) -> str:
    """Text of sql/NAME.sql. Statements may hold psycopg.sql placeholders like {filter}."""
    return resources.files("windowrag_pg._sql").joinpath(f"{name}.sql").read_text(encoding="utf-8")
