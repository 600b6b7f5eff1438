"""Shared fixtures: a real embedded PostgreSQL (fresh data folder per test session), the real
ONNX models, and the real evaluation files in ../shared/eval."""
from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EVAL_DIR = Path(os.environ.get("WINDOWRAG_EVAL_DIR", REPO.parent / "shared" / "eval"))


def squad_dev_dir() -> Path | None:
    """../shared/eval/squad-dev (or under $WINDOWRAG_EVAL_DIR), when it is there."""
    folder = EVAL_DIR / "squad-dev"
    return folder if (folder / "documents.jsonl").is_file() else None


def require_optional(module_name: str, what: str):
    """Import an optional test dependency, or skip with the reason (missing or broken install)."""
    import importlib

    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        pytest.skip(f"{what} not usable: {exc}")


def read_jsonl(path: Path, limit: int | None = None) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                rows.append(json.loads(line))
                if limit is not None and len(rows) >= limit:
                    break
    return rows


@pytest.fixture(scope="session")
def eval_dir() -> Path:
    if not EVAL_DIR.is_dir():
        pytest.skip(f"evaluation data not found at {EVAL_DIR}")
    return EVAL_DIR


@pytest.fixture(scope="session")
def db_url() -> str:
    """WINDOWRAG_TEST_DATABASE_URL, or an embedded server in a fresh folder (stopped at the end)."""
    url = os.environ.get("WINDOWRAG_TEST_DATABASE_URL")
    if url:
        yield url
        return
    import shutil
    import tempfile

    from windowrag_pg.db.embedded import start_embedded, stop_embedded

    # Not under pytest's numbered basetemp: another pytest session on the same machine prunes old
    # basetemps (chmod + delete), which would pull the data folder from under a running server.
    home = Path(tempfile.mkdtemp(prefix="windowrag-test-"))
    yield start_embedded(home)
    stop_embedded(home)
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def embedder():
    from windowrag_pg.embed import get_embedder

    return get_embedder()


@pytest.fixture()
def conn(db_url):
    from windowrag_pg.db.connection import connect

    connection = connect(db_url, autocommit=True)
    yield connection
    connection.close()


@pytest.fixture()
def collection_name() -> str:
    return f"test_{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def contractnli_collection(db_url, embedder, eval_dir) -> str:
    """All 61 ContractNLI dev contracts ingested once per session (≈ 6,000 sentences)."""
    from windowrag_pg.db.connection import connect
    from windowrag_pg.ingest import Ingestor
    from windowrag_pg.sources import iter_sources

    name = "contractnli_session"
    with connect(db_url, autocommit=True) as connection:
        report = Ingestor(connection, collection=name, embedder=embedder).ingest(
            iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))
    assert not report.errors, report.errors
    return name


SAMPLE_QUERIES = ["How much does the company pay of the dental plan?", "What is the learning budget?",
                  "How do I report a security incident?", "parental leave", "security keys for the cloud console"]


@pytest.fixture(scope="session")
def samples_collection(db_url, embedder) -> str:
    """The two bundled sample documents (handbook, security practices), ingested once."""
    from importlib import resources

    from windowrag_pg.db.connection import connect
    from windowrag_pg.ingest import Ingestor
    from windowrag_pg.sources import SourceDocument

    folder = resources.files("windowrag_pg.samples")
    documents = [SourceDocument(external_id=name, format="markdown", text=(folder / name).read_text(encoding="utf-8"))
                 for name in ("handbook.md", "security.md")]
    name = "samples_session"
    with connect(db_url, autocommit=True) as connection:
        report = Ingestor(connection, collection=name, embedder=embedder).ingest(documents)
    assert not report.errors, report.errors
    return name


def plans_of(conn, statement: str, params) -> list[str]:
    """The plans of every statement STATEMENT runs, nested ones included (auto_explain)."""
    import psycopg

    plans: list[str] = []
    try:
        conn.execute("LOAD 'auto_explain'")
    except psycopg.errors.UndefinedFile:  # a server built without contrib (pgserver's PostgreSQL 16)
        conn.rollback()
        pytest.skip("the test server has no auto_explain module (PostgreSQL's contrib) to read plans with")
    conn.execute("SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;"
                 " SET client_min_messages = log")
    conn.add_notice_handler(lambda notice: plans.append(notice.message_primary))
    conn.execute(statement, params).fetchall()
    conn.execute("RESET client_min_messages; RESET auto_explain.log_min_duration")
    return plans


@contextmanager
def scratch_database(db_url: str, name: str) -> Iterator[str]:
    """A new, empty database NAME on the test server (for migrations run down and up); its URL.
    Dropped at the end, even if connections are left open."""
    import psycopg
    from psycopg import sql

    def drop(admin):
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    with psycopg.connect(db_url, autocommit=True) as admin:
        drop(admin)
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield psycopg.conninfo.make_conninfo(db_url, dbname=name)
    finally:
        with psycopg.connect(db_url, autocommit=True) as admin:
            drop(admin)
