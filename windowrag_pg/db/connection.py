"""Connections: the embedded server by default, any Postgres ≥ 14 with pgvector ≥ 0.8 by URL.

This is the one place that opens connections; it checks the server and brings the schema to
the latest migration before handing a connection out.
"""
from __future__ import annotations

import os
import re
import threading
import weakref
from importlib import resources
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus
from pgvector.psycopg import register_vector

from ..config import behind_transaction_pooler, database_url_from_env, statement_timeout_ms
from .embedded import start_embedded
from .sqlfiles import load_sql

MIN_SERVER_VERSION = 140000
MIN_PGVECTOR = (0, 8, 0)
# Any constant: serialises concurrent migrations of one database.
MIGRATION_LOCK_KEY = 0x77696E64  # "wind"
CONNECT_TIMEOUT_SECONDS = 10


class DatabaseError(RuntimeError):
    """The server cannot be used: too old, pgvector missing, unreachable."""


def database_url(url: str | None = None) -> str:
    """The URL in use: the argument, else $WINDOWRAG_DATABASE_URL, else the embedded server."""
    return url or database_url_from_env() or start_embedded()


def sqlalchemy_url(url: str) -> str:
    parts = urlsplit(url)
    scheme = "postgresql+psycopg" if parts.scheme in ("postgres", "postgresql") else parts.scheme
    return urlunsplit((scheme, *parts[1:]))


def connect(url: str | None = None, *, migrate: bool = True, autocommit: bool = False) -> psycopg.Connection:
    """Open a psycopg connection with pgvector types registered and the schema at head."""
    resolved = database_url(url)
    try:
        conn = psycopg.connect(resolved, autocommit=autocommit, prepare_threshold=None, **connect_timeout(resolved))
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to {redact_passwords(resolved)}: {redact_passwords(str(exc))}".strip()) from exc
    except psycopg.ProgrammingError as exc:  # a URL libpq cannot read
        raise DatabaseError(f"not a database URL: {redact_passwords(resolved)} ({redact_passwords(str(exc))})") from exc
    try:
        prepare_connection(conn, migrate=migrate)
    except BaseException:
        conn.close()
        raise
    return conn


def connect_timeout(url: str) -> dict[str, int]:
    """connect_timeout=CONNECT_TIMEOUT_SECONDS unless the URL or $PGCONNECT_TIMEOUT sets one: a
    server that accepts the TCP connection and never answers hung every command for good."""
    if os.environ.get("PGCONNECT_TIMEOUT"):
        return {}
    try:
        given = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return {}  # psycopg.connect names the problem
    return {} if "connect_timeout" in given else {"connect_timeout": CONNECT_TIMEOUT_SECONDS}


def prepare_connection(conn: psycopg.Connection, *, migrate: bool = True) -> None:
    """Make any psycopg connection ready for the library: server checked, schema at head
    (MIGRATE) or checked to be at head (a read replica cannot migrate), pgvector types
    registered, statement timeout set."""
    check_server(conn)
    try:
        if migrate:
            upgrade(conn)
        else:
            check_revision(conn)
    except psycopg.errors.InsufficientPrivilege as exc:  # (reading windowrag.alembic_version)
        raise DatabaseError(
            f"role {conn.info.user!r} may not use the schema windowrag: {exc.diag.message_primary}. Grant it "
            "a windowrag role as the schema's owner (windowrag_reader, windowrag_writer or windowrag_service: "
            "docs/tenancy.md)") from None
    register_vector(conn)
    set_session_defaults(conn)
    if not conn.autocommit:
        conn.commit()
    _ready.add(conn)


# Connections made ready (by connect, or on first use): a second Pipeline over the same connection
# does not register the types again.
_ready: weakref.WeakSet = weakref.WeakSet()


def session_statement_timeout() -> str | None:
    """The statement timeout the library sets on its sessions, in ms: none behind a transaction
    pooler, where it would stay on a pooled backend for other clients (the role's or server's
    setting applies)."""
    return None if behind_transaction_pooler() else str(statement_timeout_ms())


def set_session_defaults(conn: psycopg.Connection) -> None:
    """The library's session settings on CONN (session_statement_timeout)."""
    timeout = session_statement_timeout()
    if timeout is not None:
        conn.execute(load_sql("set_statement_timeout"), [timeout])


# Which servers' schemas this process has checked (and migrated): a caller's connection is not
# used for that (its transaction is the caller's); a connection of our own is, once per server.
_schema_checked: set[tuple[str, bool]] = set()
_schema_lock = threading.Lock()


def ensure_schema(conninfo: str, *, migrate: bool = True) -> None:
    """Check the server at CONNINFO and bring its schema to head (MIGRATE) or check it is there,
    on a short-lived connection of our own, once per process."""
    with _schema_lock:
        if (conninfo, migrate) not in _schema_checked:
            connect(conninfo, migrate=migrate).close()
            _schema_checked.add((conninfo, migrate))


def same_server(conn: psycopg.Connection | psycopg.AsyncConnection) -> str:
    """A conninfo string that opens another connection to the server CONN is connected to, as
    its role: the host, address, port and database in use named explicitly (its dsn leaves out
    libpq's defaults, which $PGPORT and the like would fill, and may list several hosts), with
    its other parameters (sslmode, …) and password."""
    info = conn.info
    params = {key: value for key, value in info.get_parameters().items()
              if key not in ("host", "hostaddr", "port", "target_session_attrs", "load_balance_hosts")}
    params.update(host=info.host, port=str(info.port), dbname=info.dbname, user=info.user)
    if info.hostaddr:
        params["hostaddr"] = info.hostaddr
    if info.password:
        params["password"] = info.password
    return make_conninfo(**params)


def prepare_callers_connection(conn: psycopg.Connection, *, migrate: bool = True) -> None:
    """Make a connection the caller gave us ready (pgvector types, statement timeout) without ending
    the caller's transaction; the server and schema are checked on a connection of our own."""
    if conn in _ready:
        return
    ensure_schema(same_server(conn), migrate=migrate)
    idle = conn.info.transaction_status == TransactionStatus.IDLE
    register_vector(conn)
    set_session_defaults(conn)
    if idle and not conn.autocommit:
        conn.commit()  # the transaction our statements opened, not the caller's
    _ready.add(conn)


def check_server(conn: psycopg.Connection) -> None:
    version = conn.info.server_version
    if version < MIN_SERVER_VERSION:
        raise DatabaseError(f"PostgreSQL {version // 10000} is too old: windowrag-pg needs 14 or newer")
    row = conn.execute(load_sql("pgvector_available")).fetchone()
    if row is None:
        raise DatabaseError(
            "the pgvector extension is not available on this server: install pgvector ≥ 0.8 "
            "(https://github.com/pgvector/pgvector) or use the embedded server (unset WINDOWRAG_DATABASE_URL)"
        )
    available = _version_tuple(row[1] or row[0])
    if available < MIN_PGVECTOR:
        raise DatabaseError(
            f"pgvector {row[1] or row[0]} is too old: windowrag-pg needs 0.8 or newer "
            "(iterative HNSW scans); run ALTER EXTENSION vector UPDATE after upgrading the package"
        )
    if not conn.autocommit:
        conn.rollback()


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def _alembic_config(connection=None):
    from alembic.config import Config

    location = str(resources.files("windowrag_pg._migrations"))
    config = Config()
    config.set_main_option("path_separator", "os")
    config.set_main_option("script_location", location)
    config.set_main_option("version_locations", f"{location}/versions")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_alembic_config()).get_current_head()


def current_revision(conn: psycopg.Connection) -> str | None:
    if not conn.execute(load_sql("alembic_version_exists")).fetchone()[0]:
        return None
    row = conn.execute(load_sql("alembic_version")).fetchone()
    return row[0] if row else None


def upgrade(conn: psycopg.Connection, revision: str = "head") -> None:
    """Run Alembic migrations up to REVISION (a no-op when already there)."""
    head = head_revision()
    target = head if revision == "head" else revision
    current = current_revision(conn)
    if current == target:
        if not conn.autocommit:
            conn.rollback()
        return
    if current is not None and not _known_revision(current):
        # Alembic would fail with "Can't locate revision"; say what happened and change nothing
        if not conn.autocommit:
            conn.rollback()
        raise _newer_schema_error(conn, current, head)
    try:
        _run_alembic(conn, "upgrade", revision)
    except Exception as exc:
        dependents = _cause(exc, psycopg.errors.DependentObjectsStillExist)
        if dependents is not None:
            # a view or function of the user's own over a windowrag function whose result columns a
            # migration changes (0028, 0029, 0030): Postgres refuses the drop and the migration rolls back
            raise DatabaseError(
                f"the schema of {redact_passwords(_connection_url(conn))} is at revision {current or 'none'} and the library "
                f"needs {target}, which drops and creates again a function that objects of your own depend on "
                f"({dependents.diag.message_primary}; {(dependents.diag.message_detail or '').strip()}): drop them, "
                "migrate (any windowrag command), and create them again; nothing was changed") from None
        if not _caused_by(exc, psycopg.errors.InsufficientPrivilege):
            raise
        # a tenant role on a database the library is newer than (deployed before the owner migrated)
        raise DatabaseError(
            f"the schema of {redact_passwords(_connection_url(conn))} is at revision {current or 'none'}, the library needs "
            f"{target}, and role {conn.info.user!r} may not migrate it: connect once as the schema's owner (any "
            "windowrag command, or alembic -c migrations/alembic.ini upgrade head); nothing was changed") from None


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether KIND is EXC or in its chain (SQLAlchemy wraps psycopg's errors)."""
    return _cause(exc, kind) is not None


def _cause(exc: BaseException | None, kind: type[BaseException]):
    """The first exception of type KIND in EXC's chain, or None."""
    while exc is not None:
        if isinstance(exc, kind):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _known_revision(revision: str) -> bool:
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    try:
        return ScriptDirectory.from_config(_alembic_config()).get_revision(revision) is not None
    except CommandError:
        return False


def _newer_schema_error(conn: psycopg.Connection, current: str, head: str) -> DatabaseError:
    """A newer windowrag-pg migrated this database (a rolling deploy, a library rolled back)."""
    return DatabaseError(
        f"the schema of {redact_passwords(_connection_url(conn))} is at revision {current}, which this windowrag-pg "
        f"does not know (its newest is {head}): a newer windowrag-pg migrated it. Install that version "
        f"here, or have it downgrade the database to {head} first (alembic downgrade {head}); nothing "
        f"was changed"
    )


def check_revision(conn: psycopg.Connection) -> None:
    """Refuse a database whose schema is not at the library's head (without migrating it)."""
    current, head = current_revision(conn), head_revision()
    if not conn.autocommit:
        conn.rollback()
    if current is not None and current != head and not _known_revision(current):
        raise _newer_schema_error(conn, current, head)
    if current != head:
        raise DatabaseError(
            f"the schema of {redact_passwords(_connection_url(conn))} is at revision {current or 'none'}, the library "
            f"needs {head}: connect to the primary once to migrate it (a replica follows once it has replayed)"
        )


def downgrade(conn: psycopg.Connection, revision: str = "base", *, confirm_data_loss: bool = False) -> None:
    """Run Alembic downgrades to REVISION. One that deletes stored data (below 0001) raises
    DataLossNotConfirmed, changing nothing, unless confirm_data_loss (windowrag_pg/db/data_loss.py)."""
    from .data_loss import CONFIRM_ATTRIBUTE

    _run_alembic(conn, "downgrade", revision, attributes={CONFIRM_ATTRIBUTE: confirm_data_loss})


def _run_alembic(conn: psycopg.Connection, action: str, revision: str, *, attributes: dict | None = None) -> None:
    from alembic import command
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    if not conn.autocommit:
        conn.rollback()
    # Alembic works through SQLAlchemy: hand it a connection of its own to the same server, with
    # the connection's parameters (sslmode, certificates, …; a URL rebuilt from host, port and
    # user lost them) and no server-side prepared statement (they break transaction poolers).
    conninfo = same_server(conn)
    engine = create_engine("postgresql+psycopg://", poolclass=NullPool,
                           creator=lambda: psycopg.connect(conninfo, prepare_threshold=None))
    try:
        with engine.begin() as sa_conn:
            sa_conn.exec_driver_sql(load_sql("migration_lock"), (MIGRATION_LOCK_KEY,))
            config = _alembic_config(sa_conn)
            config.attributes.update(attributes or {})
            getattr(command, action)(config, revision)
    finally:
        engine.dispose()


def _connection_url(conn: psycopg.Connection) -> str:
    info = conn.info
    params = info.get_parameters()
    host = params.get("host", "")
    user = params.get("user", "")
    password = info.password or ""
    port = params.get("port", "")
    dbname = params.get("dbname", "")
    from urllib.parse import quote

    auth = quote(user, safe="")
    if password:
        auth += ":" + quote(password, safe="")
    if host.startswith("/"):
        return f"postgresql://{auth}@/{quote(dbname, safe='')}?host={quote(host, safe='/')}&port={port}"
    return f"postgresql://{auth}@{host}:{port}/{quote(dbname, safe='')}"


def redact_passwords(text: str) -> str:
    """TEXT (a URL, or a message quoting one) with passwords as ***: user:password@ and
    password=... (a malformed URL was echoed whole)."""
    text = re.sub(r"(?<=[^:/@\s]):[^:/@\s]*@", ":***@", text)
    return re.sub(r"(password\s*=\s*)('[^']*'|\S+)", r"\1***", text, flags=re.IGNORECASE)
