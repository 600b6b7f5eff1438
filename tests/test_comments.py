"""psql users read the schema with \\df+ and \\dt+: every function and table of windowrag carries a
comment at head (sql/comments.sql, migration 0025), and 0025's downgrade takes them off."""
from windowrag_pg.db import connection as db

from .conftest import scratch_database

UNCOMMENTED_FUNCTIONS = """
    SELECT p.oid::regprocedure::text FROM pg_proc p
    WHERE p.pronamespace = 'windowrag'::regnamespace AND coalesce(obj_description(p.oid, 'pg_proc'), '') = ''
    ORDER BY 1"""
UNCOMMENTED_TABLES = """
    SELECT c.relname::text FROM pg_class c
    WHERE c.relnamespace = 'windowrag'::regnamespace AND c.relkind = 'r' AND c.relname <> 'alembic_version'
      AND coalesce(obj_description(c.oid, 'pg_class'), '') = ''
    ORDER BY 1"""
COMMENT_COUNT = """
    SELECT (SELECT count(*) FROM pg_proc p WHERE p.pronamespace = 'windowrag'::regnamespace
              AND obj_description(p.oid, 'pg_proc') IS NOT NULL)
         + (SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'windowrag'::regnamespace
              AND obj_description(c.oid, 'pg_class') IS NOT NULL)"""


def test_every_function_and_table_has_a_comment_at_head(conn):
    assert conn.execute(UNCOMMENTED_FUNCTIONS).fetchall() == []
    assert conn.execute(UNCOMMENTED_TABLES).fetchall() == []
    offsets = conn.execute("SELECT col_description(a.attrelid, a.attnum) FROM pg_attribute a "
                           "WHERE a.attrelid = 'windowrag.sentences'::regclass AND a.attname = 'start_char'").fetchone()[0]
    assert "substr(d.text, start_char + 1, end_char - start_char) = text" in offsets


def test_0025_comments_down_and_up(db_url):
    with scratch_database(db_url, "migration_0025_test") as url, db.connect(url, autocommit=True) as conn:
        at_head = conn.execute(COMMENT_COUNT).fetchone()[0]
        assert at_head > 30
        db.downgrade(conn, "0024")
        assert conn.execute(COMMENT_COUNT).fetchone()[0] == 0
        db.upgrade(conn)
        assert conn.execute(COMMENT_COUNT).fetchone()[0] == at_head
        assert conn.execute(UNCOMMENTED_FUNCTIONS).fetchall() == []
