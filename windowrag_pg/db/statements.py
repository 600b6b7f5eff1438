"""One query path for the synchronous and the asynchronous API.

The pipeline is written once, as steps: a generator that yields each Statement it needs and
receives its rows. run_steps executes the statements on a synchronous connection source;
arun_steps on an asynchronous one, and runs the steps between statements (query embedding,
cross-encoder, selection, assembly: CPU work) in a worker thread, off the event loop, so that
concurrent requests overlap their database waits. Both run the same code, so their results are
the same.
"""
from __future__ import annotations

import asyncio
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from .native import explain_missing_native

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Statement:
    query: Any  # SQL text, or a psycopg.sql Composable
    params: Any = None
    prepare: bool | None = None


Steps = Generator[Statement, list, T]


def run_steps(steps: Steps[T], source: Any) -> T:
    """Drive STEPS on a synchronous ConnectionSource (windowrag_pg.db.source)."""
    rows = None
    try:
        while True:
            statement = steps.send(rows)
            for attempt in (1, 2):
                used = None
                try:
                    with source.connection() as conn, _explained():
                        used = conn
                        rows = conn.execute(statement.query, statement.params, prepare=statement.prepare).fetchall()
                    break
                except Exception as exc:
                    if attempt == 2 or not _dropped(used, exc):
                        raise
    except StopIteration as done:
        return done.value


async def arun_steps(steps: Steps[T], source: Any) -> T:
    """Drive STEPS on an asynchronous source (windowrag_pg.db.async_source): statements on the
    event loop, everything between them in a worker thread."""
    statement, result = await asyncio.to_thread(_advance, steps, None)
    while statement is not None:
        for attempt in (1, 2):
            used = None
            try:
                async with source.connection() as conn:
                    used = conn
                    with _explained():
                        cursor = await conn.execute(statement.query, statement.params, prepare=statement.prepare)
                        rows = await cursor.fetchall()
                break
            except Exception as exc:
                if attempt == 2 or not _dropped(used, exc):
                    raise
        statement, result = await asyncio.to_thread(_advance, steps, rows)
    return result


def _dropped(conn: Any, exc: BaseException) -> bool:
    """Whether EXC is the server dropping CONN (a restart: "terminating connection due to
    administrator command"). The steps' statements only read, so the statement runs once more,
    on the new connection the source then opens (the first search after a restart failed)."""
    import psycopg

    cause = exc if isinstance(exc, psycopg.OperationalError) else exc.__cause__
    return isinstance(cause, psycopg.OperationalError) and conn is not None and (conn.closed or conn.broken)


@contextmanager
def _explained() -> Iterator[None]:
    """Server errors that have a known cause and cure get a message saying so."""
    try:
        yield
    except Exception as exc:
        explained = explain_missing_native(exc)
        if explained is None:
            raise
        raise explained from exc


def _advance(steps: Steps[T], rows: list | None) -> tuple[Statement | None, T | None]:
    # StopIteration cannot cross a thread's future: turn it into (None, result)
    try:
        return steps.send(rows), None
    except StopIteration as done:
        return None, done.value
