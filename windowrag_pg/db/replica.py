"""Read replicas: queries may go to a streaming replica (WINDOWRAG_READ_DATABASE_URL, read_url=)
while ingest goes to the primary. A replica shows a commit once it has replayed it (usually
milliseconds later, see docs/services.md); wait_for_replay waits for that when a caller must
read its own writes."""
from __future__ import annotations

import time

import psycopg

from .connection import DatabaseError
from .sqlfiles import load_sql


def wait_for_replay(primary: psycopg.Connection, replica: psycopg.Connection, *, timeout: float = 10.0,
                    interval: float = 0.005) -> float:
    """Wait until REPLICA has replayed all that PRIMARY had written at the call; the seconds waited.

    Raises DatabaseError when REPLICA is not a replica, or has not caught up within TIMEOUT.
    """
    started = time.monotonic()
    position = primary.execute(load_sql("current_wal_lsn")).fetchone()[0]
    if not primary.autocommit:
        primary.rollback()
    while True:
        reached = replica.execute(load_sql("replay_reached"), [position]).fetchone()[0]
        if not replica.autocommit:
            replica.rollback()
        waited = time.monotonic() - started
        if reached is None:
            raise DatabaseError("the read connection is not a streaming replica (pg_last_wal_replay_lsn() is NULL)")
        if reached:
            return waited
        if waited > timeout:
            raise DatabaseError(f"the replica has not replayed WAL position {position} within {timeout:g} s")
        time.sleep(interval)
