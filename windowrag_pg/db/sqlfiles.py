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


# Migrations from 0010 on freeze, beside themselves, the functions they replace, as they were
# before (migrations/versions/NNNN_functions.sql). A new migration that changes sql/functions.sql
# adds its revision here.
REPLACED_FUNCTIONS = ("0010", "0011", "0012", "0013", "0014", "0015", "0016", "0017", "0018", "0019", "0020", "0021",
                      "0022", "0023", "0024", "0026", "0027", "0028", "0029", "0030", "0031", "0032", "0033")


def functions_as_of(revision: str) -> list[str]:
    """The statements that install the retrieval functions as REVISION had them: the live
    sql/functions.sql, then each later migration's frozen copy of what it replaced, newest first
    (so the oldest definition of each function wins)."""
    later = sorted((r for r in REPLACED_FUNCTIONS if r > revision), reverse=True)
    return [load_sql("functions")] + [load_frozen_sql(f"{r}_functions") for r in later]
