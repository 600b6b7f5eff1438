"""alembic downgrade base / upgrade head on a populated database (in a database of its own)."""
from __future__ import annotations

import psycopg
from psycopg import sql

from windowrag_pg.db import connection as db
from windowrag_pg.ingest import Ingestor
from windowrag_pg.sources import SourceDocument


def test_downgrade_and_upgrade_on_a_populated_database(db_url, embedder):
    name = "migration_test"
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = psycopg.conninfo.make_conninfo(db_url, dbname=name)
    with db.connect(url, autocommit=True) as conn:
        Ingestor(conn, collection="m", embedder=embedder).ingest([
            SourceDocument(external_id="a", format="markdown", text="# A\n\nFirst sentence here. Second one there.")
        ])
        assert conn.execute("SELECT count(*) FROM windowrag.sentences").fetchone()[0] == 3
        db.downgrade(conn, "base")
        assert conn.execute("SELECT to_regclass('windowrag.sentences')").fetchone()[0] is None
        db.upgrade(conn)
        assert db.current_revision(conn) == db.head_revision()
        assert conn.execute("SELECT count(*) FROM windowrag.sentences").fetchone()[0] == 0
