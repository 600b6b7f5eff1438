"""Asynchronous connection sources: a psycopg AsyncConnection, a psycopg_pool AsyncConnectionPool
or a URL, lent for one statement at a time (windowrag_pg.db.source is the synchronous twin).

Checking the server and migrating the schema are rare and synchronous (Alembic): they run once
per database on a short-lived synchronous connection in a worker thread, never on the event loop.
"""
from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg.pq import TransactionStatus

from .connection import (
    DatabaseError,
    database_url,
    ensure_schema,
    redact_passwords,
    same_server,
    session_statement_timeout,
)
from .source import READ_REPLICA, SharedUse, _is_pool, name_errors
from .sqlfiles import load_sql


async def prepare_async_connection(conn: psycopg.AsyncConnection, *, migrate: bool = True) -> None:
    """As prepare_callers_connection: server and schema checked (once per server, on a connection
    of our own), pgvector types registered, statement timeout set (none behind a transaction
    pooler); the caller's transaction, if one is open, is left as it is."""
    await asyncio.to_thread(ensure_schema, same_server(conn), migrate=migrate)
    idle = conn.info.transaction_status == TransactionStatus.IDLE
    await register_vector_async(conn)
    timeout = session_statement_timeout()
    if timeout is not None:
        await conn.execute(load_sql("set_statement_timeout"), [timeout])
    if idle and not conn.autocommit:
        await conn.commit()


class AsyncConnectionTurns:
    """What every user of one AsyncConnection shares, whichever AsyncPipeline or retriever wraps
    it (as source.ConnectionTurns): the turn, whether it is prepared, and SharedUse. Per wrapper,
    two retrievers' first calls under asyncio.gather prepared it at once and nested their
    transactions (OutOfOrderTransactionNesting), leaving an autocommit connection in one."""

    def __init__(self) -> None:
        self.turn = asyncio.Lock()
        self.ready = False
        self.use = SharedUse()


_turns: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_turns_lock = threading.Lock()  # retrievers may be built in any thread


def async_turns_of(conn: psycopg.AsyncConnection) -> AsyncConnectionTurns:
    """The AsyncConnectionTurns of CONN, one per connection object for as long as it lives."""
    with _turns_lock:
        turns = _turns.get(conn)
        if turns is None:
            turns = _turns[conn] = AsyncConnectionTurns()
        return turns


class AsyncSingleConnection:
    """One AsyncConnection shared by every call: concurrent calls take turns on it, one statement
    at a time, also across the AsyncPipelines and retrievers given the same connection."""

    def __init__(self, conn: psycopg.AsyncConnection, *, migrate: bool = True) -> None:
        self.conn = conn
        self.migrate = migrate
        self._turns = async_turns_of(conn)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        turns = self._turns
        async with turns.turn:
            if not turns.ready:
                await prepare_async_connection(self.conn, migrate=self.migrate)
                turns.ready = True
            turns.use.enter(self.conn)
            try:
                yield self.conn
            finally:
                if turns.use.leave(self.conn):
                    try:
                        await self.conn.rollback()
                    finally:
                        turns.use.ended()


class AsyncPooledConnections:
    """A psycopg_pool.AsyncConnectionPool: a connection per statement, so concurrent requests
    overlap their database waits up to the pool's size."""

    def __init__(self, pool: Any, *, migrate: bool = True) -> None:
        self.pool = pool
        self.migrate = migrate
        self._ready: weakref.WeakSet = weakref.WeakSet()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        async with self.pool.connection() as conn:
            if conn not in self._ready:
                await prepare_async_connection(conn, migrate=self.migrate)
                self._ready.add(conn)
            yield conn


class AsyncLazyConnection:
    """A URL (None: $WINDOWRAG_DATABASE_URL, else the embedded server), connected on first use
    and again after the server dropped the connection. Bound to the event loop that opened it."""

    def __init__(self, url: str | None = None, *, migrate: bool = True, role: str | None = None) -> None:
        self.url = url
        self.migrate = migrate
        self.role = role
        self._conn: psycopg.AsyncConnection | None = None
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        async with self._lock:
            if self._conn is None or self._conn.closed or self._conn.broken:
                with name_errors(self.role, "cannot be used"):
                    self._conn = await _open(self.url, migrate=self.migrate)
            conn = self._conn
        with name_errors(self.role, "failed"):
            yield conn

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()


async def _open(url: str | None, *, migrate: bool) -> psycopg.AsyncConnection:
    # database_url may start the embedded server: blocking, so in a thread
    resolved = await asyncio.to_thread(database_url, url)
    try:
        conn = await psycopg.AsyncConnection.connect(resolved, autocommit=True, prepare_threshold=None)
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to {redact_passwords(resolved)}: {exc}".strip()) from exc
    try:
        await prepare_async_connection(conn, migrate=migrate)
    except BaseException:
        await conn.close()
        raise
    return conn


def async_read_source(url: str) -> AsyncLazyConnection:
    return AsyncLazyConnection(url, migrate=False, role=READ_REPLICA)


def async_connection_source(target: Any, *, migrate: bool = True):
    """An async source for an AsyncConnection, an AsyncConnectionPool, a URL or None."""
    if isinstance(target, psycopg.AsyncConnection):
        return AsyncSingleConnection(target, migrate=migrate)
    if target is None or isinstance(target, str):
        return AsyncLazyConnection(target, migrate=migrate)
    if _is_pool(target, "AsyncConnectionPool"):
        return AsyncPooledConnections(target, migrate=migrate)
    if isinstance(target, (AsyncSingleConnection, AsyncPooledConnections, AsyncLazyConnection)):
        return target
    raise TypeError(f"expected a psycopg AsyncConnection, a psycopg_pool AsyncConnectionPool or a URL, "
                    f"not {type(target).__name__}")
