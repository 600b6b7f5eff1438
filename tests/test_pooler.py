"""Connections the library does not open itself, and a transaction pooler (PgBouncer) between the
library and the server: no server-side prepared statement of ours, no session setting left on a
pooled backend, the vector index's turn held by a transaction, a caller's transaction untouched."""
from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

import windowrag_pg as wr
from windowrag_pg.config import TRANSACTION_POOLER_ENV, behind_transaction_pooler
from windowrag_pg.db.connection import connect
from windowrag_pg.doctor import run_checks
from windowrag_pg.ingest import Ingestor
from windowrag_pg.pipeline import Pipeline
from windowrag_pg.sources import SourceDocument
from windowrag_pg.store.collections import (
    INDEX_DDL_LOCK_KEY,
    _index_build_settings,
    collection_index_state,
    get_collection,
    index_ddl_turn,
)

from .conftest import SAMPLE_QUERIES


def documents(n: int, prefix: str) -> list[SourceDocument]:
    return [SourceDocument(external_id=f"{prefix}{i}", format="text",
                           text=f"Pooled note {i} is about topic{i}. The second sentence of note {i} adds a detail. "
                                f"A third sentence closes note {i}.")
            for i in range(n)]


def contexts(result):
    return [(c.citation.document_id, c.citation.start_char, c.citation.end_char, c.text) for c in result.contexts]


def advisory_locks(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute("SELECT l.pid, a.state, a.backend_xmin FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                        "WHERE l.locktype = 'advisory' AND l.objid = %s", [INDEX_DDL_LOCK_KEY]).fetchall()


def test_a_plain_psycopg_connection_is_made_ready_on_first_use(db_url, conn, embedder, samples_collection):
    """A connection of psycopg.connect (not wr.connect) had no pgvector types: every search failed
    with "cannot adapt type 'ndarray'"."""
    want = [contexts(Pipeline(conn, collection=samples_collection, embedder=embedder).search(q, k=3))
            for q in SAMPLE_QUERIES]
    with psycopg.connect(db_url) as raw:
        got = [contexts(Pipeline(raw, collection=samples_collection, embedder=embedder).search(q, k=3))
               for q in SAMPLE_QUERIES]
        assert got == want and all(got)
        assert raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_a_callers_open_transaction_is_left_open(db_url, embedder, samples_collection):
    with psycopg.connect(db_url) as raw:
        raw.execute("CREATE TEMP TABLE callers_work (x int)")
        raw.execute("INSERT INTO callers_work VALUES (1)")
        result = Pipeline(raw, collection=samples_collection, embedder=embedder).search(SAMPLE_QUERIES[0], k=2)
        assert result.contexts
        assert raw.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS  # neither committed nor rolled back
        assert raw.execute("SELECT count(*) FROM callers_work").fetchone()[0] == 1
        raw.rollback()
        assert raw.execute("SELECT to_regclass('pg_temp.callers_work')").fetchone()[0] is None  # it was still open


def test_the_library_prepares_no_statement_on_the_server(db_url, embedder, samples_collection):
    """psycopg prepares a statement run 5 times on a connection; behind a transaction pooler the
    next run lands on another backend ("prepared statement "_pg3_0" does not exist")."""
    with connect(db_url, autocommit=True) as own:
        assert own.prepare_threshold is None
        pipeline = Pipeline(own, collection=samples_collection, embedder=embedder)
        for _ in range(3):
            for q in SAMPLE_QUERIES:
                pipeline.search(q, k=2)
        assert own.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()[0] == 0


def test_another_connection_to_the_same_server_keeps_the_connections_parameters(db_url, monkeypatch):
    """same_server opens the index turn's holder and the migrations' connection: the host, port and
    database in use named (libpq's defaults would come from $PGPORT and the like), the other
    parameters kept (a URL rebuilt from host, port and user lost sslmode and certificates)."""
    from windowrag_pg.db.connection import same_server

    with psycopg.connect(db_url, application_name="callers_app", sslmode="disable") as given:
        params = conninfo_to_dict(same_server(given))
        assert params["application_name"] == "callers_app" and params["sslmode"] == "disable"
        assert (params["host"], params["port"], params["dbname"]) == (given.info.host, str(given.info.port),
                                                                      given.info.dbname)
        monkeypatch.setenv("PGPORT", "1")  # (no server there)
        with psycopg.connect(same_server(given)) as another:
            assert another.execute("SELECT current_setting('application_name')").fetchone()[0] == "callers_app"


def test_the_pooler_setting_is_read_and_a_bad_value_named(monkeypatch):
    for value, expected in (("", False), ("0", False), ("off", False), ("1", True), ("TRUE", True), ("on", True)):
        monkeypatch.setenv(TRANSACTION_POOLER_ENV, value)
        assert behind_transaction_pooler() is expected
    monkeypatch.setenv(TRANSACTION_POOLER_ENV, "pgbouncer")
    with pytest.raises(ValueError, match=f"{TRANSACTION_POOLER_ENV}='pgbouncer' is neither on"):
        behind_transaction_pooler()


def test_a_cancelled_statement_behind_a_pooler_names_the_setting_in_force(monkeypatch):
    from windowrag_pg.cli import database_error_message

    cancelled = psycopg.errors.QueryCanceled("canceling statement due to statement timeout")
    monkeypatch.setenv(TRANSACTION_POOLER_ENV, "1")  # the library set no timeout: not its 30 s
    assert database_error_message(cancelled) == ("canceling statement due to statement timeout (the role's or "
                                                 f"server's statement_timeout: {TRANSACTION_POOLER_ENV} is on)")
    monkeypatch.delenv(TRANSACTION_POOLER_ENV)
    assert database_error_message(cancelled).endswith("(the statement timeout is 30000 ms: WINDOWRAG_STATEMENT_TIMEOUT_MS)")


def test_behind_a_transaction_pooler_no_session_setting_is_made(db_url, monkeypatch):
    with psycopg.connect(db_url) as plain:
        defaults = [plain.execute("SELECT current_setting(%s)", [name]).fetchone()[0] for name in ("statement_timeout", "maintenance_work_mem")]
    monkeypatch.setenv(TRANSACTION_POOLER_ENV, "1")
    with connect(db_url, autocommit=True) as own:
        assert own.execute("SHOW statement_timeout").fetchone()[0] == defaults[0]
        with _index_build_settings(own):
            assert [own.execute("SELECT current_setting(%s)", [name]).fetchone()[0]
                    for name in ("statement_timeout", "maintenance_work_mem")] == defaults
    monkeypatch.delenv(TRANSACTION_POOLER_ENV)
    with connect(db_url, autocommit=True) as own:  # otherwise: the library's timeout, the build's memory
        assert own.execute("SHOW statement_timeout").fetchone()[0] == "30s"
        with _index_build_settings(own):
            assert own.execute("SHOW maintenance_work_mem").fetchone()[0] != defaults[1]


@pytest.mark.parametrize("pooler", ["1", "0"])
def test_the_index_turn_is_waited_for_and_ends_with_its_holder(db_url, conn, monkeypatch, pooler):
    """Behind a pooler: a transaction another connection keeps open; otherwise the session's lock."""
    monkeypatch.setenv(TRANSACTION_POOLER_ENV, pooler)
    with connect(db_url, autocommit=True) as own, connect(db_url, autocommit=True) as other:
        own_pid = own.info.backend_pid
        with index_ddl_turn(own):
            holders = advisory_locks(conn)
            assert len(holders) == 1
            if pooler == "1":  # another backend, idle in its transaction, with no snapshot a build would wait for
                assert holders[0][0] != own_pid and holders[0][1:] == ("idle in transaction", None)
            else:
                assert holders[0][0] == own_pid
            with index_ddl_turn(own):  # reentrant
                assert len(advisory_locks(conn)) == 1
            took: list[float] = []

            def wait_for_turn() -> None:
                with index_ddl_turn(other):
                    took.append(time.monotonic())

            waiter = threading.Thread(target=wait_for_turn)
            started = time.monotonic()
            waiter.start()
            time.sleep(1.0)
            assert not took  # the other connection waits for the turn
        waiter.join(timeout=10)
        assert took and took[0] - started >= 1.0
    assert advisory_locks(conn) == []  # each turn ended


# --------------------------------------------------------------------------------------------
# Through a real PgBouncer in transaction mode (Debian's pgbouncer; skipped where it is missing)
# --------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def pgbouncer_url(db_url):
    """A PgBouncer 'pool_mode = transaction' in front of the test server, with 3 server connections
    taken in turn (server_round_robin), so that one client's transactions land on different backends."""
    binary = shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.path.exists(p)), None)
    if binary is None:
        pytest.skip("pgbouncer is not installed (apt-get install pgbouncer; .ci/run installs it)")
    params = conninfo_to_dict(db_url)
    host, port = params.get("host", "/tmp"), params.get("port", "5432")
    user, dbname = params.get("user", pwd.getpwuid(os.geteuid()).pw_name), params.get("dbname", "postgres")
    folder = Path(tempfile.mkdtemp(prefix="windowrag-pgbouncer-"))
    folder.chmod(0o755)
    listen = _free_port()
    (folder / "users.txt").write_text(f'"{user}" ""\n')
    (folder / "pgbouncer.ini").write_text(
        f"[databases]\n{dbname} = host={host} port={port} dbname={dbname} user={user}\n"
        f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {listen}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {folder / 'users.txt'}\npool_mode = transaction\n"
        "default_pool_size = 3\nmin_pool_size = 3\nreserve_pool_size = 0\nserver_round_robin = 1\n"
        "ignore_startup_parameters = extra_float_digits,options\n")
    for name in ("users.txt", "pgbouncer.ini"):
        (folder / name).chmod(0o644)
    command = [binary, str(folder / "pgbouncer.ini")]
    if os.geteuid() == 0:  # PgBouncer will not run as root: as the owner of the server's socket folder
        owner = pwd.getpwuid(os.stat(host).st_uid).pw_name if host.startswith("/") else "nobody"
        command = ["runuser", "-u", owner, "--", *command]
    bouncer = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"postgresql://{user}@127.0.0.1:{listen}/{dbname}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                psycopg.connect(url, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if bouncer.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"pgbouncer did not start: {bouncer.stdout.read().decode(errors='replace')[-2000:]}")
                time.sleep(0.2)
        clients = [psycopg.connect(url, prepare_threshold=None) for _ in range(3)]  # 3 transactions at once:
        for client in clients:                                                       # 3 server connections
            client.execute("SELECT 1")
        for client in clients:
            client.commit()  # (a client gone inside a transaction takes its server connection with it)
            client.close()
        yield url
    finally:
        bouncer.terminate()
        bouncer.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


def test_ingest_build_search_and_doctor_through_pgbouncer_in_transaction_mode(
        pgbouncer_url, db_url, conn, embedder, collection_name, monkeypatch):
    """Before: the 6th document of an incremental ingest failed ("prepared statement "_pg3_0" does
    not exist"), each index build left its session advisory lock on an idle pooled backend, and the
    library's 30 s statement timeout (and a build's 512 MB) stayed on backends other clients use."""
    monkeypatch.setenv(TRANSACTION_POOLER_ENV, "1")
    with psycopg.connect(pgbouncer_url, autocommit=True, prepare_threshold=None) as probe:
        assert len({probe.execute("SELECT pg_backend_pid()").fetchone()[0] for _ in range(6)}) > 1  # really pooled

    incremental = Ingestor(pgbouncer_url, collection=collection_name, embedder=embedder, bulk=False)
    assert (incremental.ingest(documents(8, "inc")).added, incremental.ingest(documents(8, "inc")).unchanged) == (8, 8)
    bulk_name = f"{collection_name}_bulk"
    report = Ingestor(pgbouncer_url, collection=bulk_name, embedder=embedder, bulk=True).ingest(documents(14, "bulk"))
    assert (report.added, report.errors) == (14, [])

    with connect(pgbouncer_url, autocommit=True) as pooled:
        assert [collection_index_state(pooled, get_collection(pooled, name))
                for name in (collection_name, bulk_name)] == ["valid", "valid"]
        # the server's checks and our collections' (other tests leave collections drifted on purpose)
        checks = [c for c in run_checks(pooled)
                  if "'" not in c.name or any(f"'{name}'" in c.name for name in (collection_name, bulk_name))]
        assert len(checks) >= 5 and all(c.ok for c in checks), [c for c in checks if not c.ok]
        pipeline = Pipeline(pooled, collection=bulk_name, embedder=embedder)
        for i in range(12):
            assert pipeline.search(f"topic{i}", k=1).contexts[0].citation.document_id == f"bulk{i}"
    for i in range(6):
        assert wr.search(f"topic{i}", collection=collection_name, url=pgbouncer_url, k=1,
                         ).contexts[0].citation.document_id == f"inc{i}"
    wr.close()

    async def asearches() -> list[str]:
        try:
            return [(await wr.asearch(f"topic{i}", collection=collection_name, url=pgbouncer_url, k=1))
                    .contexts[0].citation.document_id for i in range(6)]
        finally:
            await wr.aclose()

    assert asyncio.run(asearches()) == [f"inc{i}" for i in range(6)]

    assert advisory_locks(conn) == []  # no turn left held on a pooled backend
    with psycopg.connect(db_url) as direct:
        server_timeout = direct.execute("SHOW statement_timeout").fetchone()[0]
    with psycopg.connect(pgbouncer_url, autocommit=True, prepare_threshold=None) as other_client:
        seen = {tuple(other_client.execute("SELECT current_setting('statement_timeout'), "
                                           "current_setting('maintenance_work_mem'), pg_backend_pid()").fetchone()[:2])
                for _ in range(9)}
    with psycopg.connect(db_url) as direct:
        server_memory = direct.execute("SHOW maintenance_work_mem").fetchone()[0]
    assert seen == {(server_timeout, server_memory)}  # what another client of the pooler sees
