"""Connection, server checks and migrations on the embedded PostgreSQL."""
from __future__ import annotations

import os

import psycopg
import pytest

from windowrag_pg.db import connection as db


@pytest.mark.skipif(bool(os.environ.get("WINDOWRAG_TEST_DATABASE_URL")),
                    reason="the tests run on the server of WINDOWRAG_TEST_DATABASE_URL, not the embedded one")
def test_embedded_server_has_postgres_18_and_pgvector_08(conn):
    assert conn.info.server_version >= 180000
    version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    assert tuple(int(p) for p in version.split(".")) >= (0, 8, 0)


def test_schema_is_at_head_and_in_its_own_schema(conn):
    assert db.current_revision(conn) == db.head_revision()
    tables = {r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'windowrag'")}
    assert {"collections", "documents", "sections", "sentences", "bm25_postings", "bm25_terms"} <= tables
    public = conn.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'").fetchone()[0]
    assert public == 0


def test_required_indexes_exist(conn):
    indexdefs = [r[0] for r in conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = 'windowrag' AND tablename = 'sentences'")]
    assert any("USING gin (tsv)" in d for d in indexdefs)
    assert any("(section_id, ordinal)" in d for d in indexdefs)
    assert any("(document_id, ordinal)" in d for d in indexdefs)


def test_unreachable_server_gives_a_clear_error():
    with pytest.raises(db.DatabaseError, match="cannot connect"):
        db.connect("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")


def test_connection_url_round_trips(conn):
    url = db._connection_url(conn)
    with psycopg.connect(url) as again:
        assert again.execute("SELECT current_database()").fetchone()[0] == conn.info.dbname


def test_a_server_that_never_answers_is_given_up_on_naming_it(monkeypatch):
    """No connect timeout was set: a host that accepts the connection and never answers (a
    firewall, a wedged proxy) hung every command for good."""
    import socket
    import time

    from windowrag_pg.db import connection

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)  # accepts into its backlog, never speaks
    port = listener.getsockname()[1]
    monkeypatch.setattr(connection, "CONNECT_TIMEOUT_SECONDS", 2)
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    started = time.monotonic()
    try:
        with pytest.raises(connection.DatabaseError, match=rf"cannot connect to postgresql://u:\*\*\*@127.0.0.1:{port}/db"):
            connection.connect(f"postgresql://u:secret@127.0.0.1:{port}/db")
    finally:
        listener.close()
    assert time.monotonic() - started < 10
    assert connection.connect_timeout(f"postgresql://u@127.0.0.1:{port}/db?connect_timeout=30") == {}


def test_a_malformed_url_is_named_without_its_password():
    from windowrag_pg.db import connection

    with pytest.raises(connection.DatabaseError) as raised:
        connection.connect("postgresql//u:s3cret@db.example.com/db")
    assert "not a database URL: postgresql//u:***@db.example.com/db" in str(raised.value)
    assert "s3cret" not in str(raised.value)
