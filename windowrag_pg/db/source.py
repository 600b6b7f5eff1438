"""Where connections come from: one connection, a psycopg_pool pool, or a URL opened on first use.

Every entry point that takes a connection (search, Pipeline, Retriever, Ingestor, the framework
retrievers) takes any of these. A ConnectionSource lends a ready connection (server checked,
schema at head, pgvector types registered, statement timeout set) for one unit of work — one
query, one ingest call — and takes it back, so a pool serves many requests at once.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import psycopg
from psycopg.pq import TransactionStatus

from ..config import READ_DATABASE_URL_ENV
from .connection import (
    DatabaseError,
    connect,
    prepare_callers_connection,
    prepare_connection,
)


class ConnectionSource(Protocol):
    def connection(self) -> Any:
        """A context manager lending a ready psycopg.Connection for one unit of work."""


class SharedUse:
    """Tells when to end the transaction our reads open on a shared non-autocommit connection:
    when the last concurrent use ends, and only if the connection was idle when the first began
    (never a transaction the caller had open)."""

    def __init__(self) -> None:
        self._users = 0
        self._ours = False
        self._ending = False  # our rollback is under way: the transaction still shown is ours
        self._lock = threading.Lock()

    def enter(self, conn: Any) -> None:
        with self._lock:
            if self._users == 0 and not self._ending:
                self._ours = conn.info.transaction_status == TransactionStatus.IDLE
            self._users += 1

    def leave(self, conn: Any) -> bool:
        """True when the caller must roll back now (and then call ended())."""
        with self._lock:
            self._users -= 1
            self._ending = (self._users == 0 and self._ours and not conn.closed
                            and conn.info.transaction_status == TransactionStatus.INTRANS)
            return self._ending

    def ended(self) -> None:
        with self._lock:
            self._ending = False


class ConnectionTurns:
    """What every user of one caller's connection shares, whichever Pipeline, retriever or
    Ingestor wraps it: the turn (a unit of work holds the connection until it ends: psycopg
    serialises statements, not transaction blocks, and another thread's first-use preparation
    or ingest opened one that a concurrent call then nested into or rolled back) and SharedUse."""

    def __init__(self) -> None:
        self.turn = threading.RLock()  # re-entrant: a unit of work may lend it again in its thread
        self.use = SharedUse()


_turns: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_turns_lock = threading.Lock()


def turns_of(conn: Any) -> ConnectionTurns:
    """The ConnectionTurns of CONN, one per connection object for as long as it lives."""
    with _turns_lock:
        turns = _turns.get(conn)
        if turns is None:
            turns = _turns[conn] = ConnectionTurns()
        return turns


class SingleConnection:
    """One connection shared by every call, made ready on first use as a pool's are (a connection
    of wr.connect already is). Concurrent calls take turns on it, also across the Pipelines,
    retrievers and Ingestors given the same connection (ConnectionTurns)."""

    def __init__(self, conn: psycopg.Connection, *, migrate: bool = True) -> None:
        self.conn = conn
        self.migrate = migrate
        self._turns = turns_of(conn)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        use = self._turns.use
        with self._turns.turn:
            use.enter(self.conn)
            try:
                prepare_callers_connection(self.conn, migrate=self.migrate)
                yield self.conn
            finally:
                if use.leave(self.conn):
                    try:
                        self.conn.rollback()
                    finally:
                        use.ended()


class PooledConnections:
    """A psycopg_pool.ConnectionPool: each unit of work checks a connection out and back in.

    The pool's connections need no special setup (pass `configure=` as you like): each one is
    prepared the first time it is lent.
    """

    def __init__(self, pool: Any, *, migrate: bool = True) -> None:
        self.pool = pool
        self.migrate = migrate
        self._ready: weakref.WeakSet = weakref.WeakSet()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        with self.pool.connection() as conn:
            if conn not in self._ready:
                prepare_connection(conn, migrate=self.migrate)
                self._ready.add(conn)
            yield conn


class LazyConnection:
    """A URL (None: $WINDOWRAG_DATABASE_URL, else the embedded server), connected on first use
    and again after the server dropped the connection (a restart, a replica that came back).

    ROLE names the server in errors (a read replica fails with a message saying so).
    """

    def __init__(self, url: str | None = None, *, migrate: bool = True, role: str | None = None) -> None:
        self.url = url
        self.migrate = migrate
        self.role = role
        self._conn: psycopg.Connection | None = None
        self._lock = threading.Lock()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        with self._lock:
            if self._conn is None or self._conn.closed or self._conn.broken:
                with name_errors(self.role, "cannot be used"):
                    self._conn = connect(self.url, autocommit=True, migrate=self.migrate)
            conn = self._conn
        with name_errors(self.role, "failed"):
            yield conn  # autocommit: no transaction to end

    def close(self) -> None:
        """Close the connection, if open; the next use opens another."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()


@contextmanager
def name_errors(role: str | None, what: str) -> Iterator[None]:
    """Errors of a server with a ROLE (the read replica) say which server failed."""
    try:
        yield
    except (DatabaseError, psycopg.OperationalError) as exc:
        if role is None:
            raise
        raise DatabaseError(f"{role} {what}: {exc}".strip()) from exc


READ_REPLICA = f"the read replica ({READ_DATABASE_URL_ENV} / read_url=)"


def read_source(url: str) -> LazyConnection:
    """Queries on a read replica: never migrated from here (the primary is), only checked to be
    at the library's schema revision."""
    return LazyConnection(url, migrate=False, role=READ_REPLICA)


def connection_source(target: Any, *, migrate: bool = True) -> ConnectionSource:
    """A ConnectionSource for a psycopg Connection, a psycopg_pool ConnectionPool, a URL or None.

    MIGRATE=False: only check that the schema is at head (a read replica cannot be migrated).
    """
    if isinstance(target, psycopg.Connection):
        return SingleConnection(target, migrate=migrate)
    if target is None or isinstance(target, str):
        return LazyConnection(target, migrate=migrate)
    if _is_pool(target, "ConnectionPool"):
        return PooledConnections(target, migrate=migrate)
    if isinstance(target, (SingleConnection, PooledConnections, LazyConnection)):
        return target
    if is_async(target):
        raise TypeError(f"{type(target).__name__} is asynchronous: use windowrag_pg.asearch / AsyncPipeline with it")
    raise TypeError(f"expected a psycopg Connection, a psycopg_pool ConnectionPool or a URL, "
                    f"not {type(target).__name__}")


def is_async(target: Any) -> bool:
    """An AsyncConnection or AsyncConnectionPool (for windowrag_pg.db.async_source)."""
    return isinstance(target, psycopg.AsyncConnection) or _is_pool(target, "AsyncConnectionPool")


def _is_pool(target: Any, class_name: str) -> bool:
    try:
        import psycopg_pool
    except ImportError:  # no pool package: nothing can be a pool
        return False
    return isinstance(target, getattr(psycopg_pool, class_name))
