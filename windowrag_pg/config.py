"""Settings read from the environment (no I/O beyond os.environ)."""
from __future__ import annotations

import os
from pathlib import Path

DATABASE_URL_ENV = "WINDOWRAG_DATABASE_URL"
# queries go to this server (a streaming replica) when set; ingest always goes to the primary
READ_DATABASE_URL_ENV = "WINDOWRAG_READ_DATABASE_URL"
HOME_ENV = "WINDOWRAG_HOME"
STATEMENT_TIMEOUT_ENV = "WINDOWRAG_STATEMENT_TIMEOUT_MS"
# the database URLs reach PostgreSQL through a transaction pooler (PgBouncer pool_mode=transaction):
# the library then sets no session setting, which would stay on a pooled backend for other clients
TRANSACTION_POOLER_ENV = "WINDOWRAG_TRANSACTION_POOLER"
DEFAULT_COLLECTION = "default"


def windowrag_home() -> Path:
    """Folder of the embedded database (and nothing else): $WINDOWRAG_HOME or the user data dir."""
    env = os.environ.get(HOME_ENV)
    if env:  # absolute: the server is started from another directory (a relative one never worked)
        return Path(env).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_data_dir("windowrag-pg"))


def database_url_from_env() -> str | None:
    return os.environ.get(DATABASE_URL_ENV) or None


def read_database_url_from_env() -> str | None:
    return os.environ.get(READ_DATABASE_URL_ENV) or None


def statement_timeout_ms() -> int:
    """$WINDOWRAG_STATEMENT_TIMEOUT_MS (0: none), else 30 s; a value that is not a whole number
    of milliseconds is named."""
    raw = os.environ.get(STATEMENT_TIMEOUT_ENV, "").strip() or "30000"
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if not 0 <= value <= 2_147_483_647:  # Postgres' statement_timeout is a 32-bit integer
        raise ValueError(f"{STATEMENT_TIMEOUT_ENV}={raw!r} is not a whole number of milliseconds from 0 (no "
                         "timeout) to 2147483647")
    return value


def behind_transaction_pooler() -> bool:
    """$WINDOWRAG_TRANSACTION_POOLER: 1/true/yes/on or 0/false/no/off (unset: off); another value is named."""
    raw = os.environ.get(TRANSACTION_POOLER_ENV, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{TRANSACTION_POOLER_ENV}={raw!r} is neither on (1, true, yes, on) nor off (0, false, no, off)")
