"""What a new user hits first (issue 12, items 4 and 5): the documented calls on the connection
`connect()` returns, the exit status of `windowrag ingest`, the query embedding for psql, and
one document per file however its path is typed."""
from __future__ import annotations

import json

import numpy as np
import psycopg
import pytest

from windowrag_pg.cli import main
from windowrag_pg.db.connection import connect
from windowrag_pg.ingest import Ingestor
from windowrag_pg.retrieve.retriever import Retriever
from windowrag_pg.sources import SourceDocument, iter_sources


def count_documents(conn, collection: str) -> int:
    return conn.execute("SELECT count(*) FROM windowrag.documents d JOIN windowrag.collections c"
                        " ON c.id = d.collection_id WHERE c.name = %s", [collection]).fetchone()[0]


def test_ingestor_works_on_the_transactional_connection_connect_returns(db_url, collection_name, embedder):
    with connect(db_url) as conn:  # psycopg's default: not autocommit, as in the README
        assert not conn.autocommit
        report = Ingestor(conn, collection=collection_name, embedder=embedder).ingest([
            SourceDocument(external_id="keys", format="text", text="Rotate signing keys every month. Keep them safe."),
            SourceDocument(external_id="bad", format="text", text="   "),
        ])
        assert report.added == 1 and [e.name for e in report.errors] == ["bad"]
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE  # nothing left open
        result = Retriever(conn, embedder=embedder, collection=collection_name).search("rotate keys", k=1, window=0)
        assert result.contexts[0].document_id == "keys"
    with connect(db_url, autocommit=True) as other:  # committed: another session sees it
        assert count_documents(other, collection_name) == 1


def test_ingestor_refuses_a_connection_holding_the_callers_transaction(db_url, collection_name, embedder):
    with connect(db_url) as conn:
        conn.execute("SELECT 1")  # an implicit transaction of the caller's, not committed
        with pytest.raises(ValueError, match="transaction in progress"):
            Ingestor(conn, collection=collection_name, embedder=embedder)


def test_cli_ingest_exits_1_after_the_summary_when_an_input_failed(db_url, collection_name, tmp_path, capsys):
    (tmp_path / "good.txt").write_text("A good document. It has two sentences.")
    (tmp_path / "bad.txt").write_bytes(b"")
    code = main(["--database-url", db_url, "ingest", str(tmp_path), "--collection", collection_name])
    out, err = capsys.readouterr()
    assert code == 1
    assert "1 document (1 added" in out and "bad.txt" in err
    code = main(["--database-url", db_url, "ingest", str(tmp_path / "good.txt"), "--collection", collection_name])
    assert code == 0 and "1 unchanged" in capsys.readouterr().out


def test_embed_query_prints_the_vector_literal_the_sql_functions_take(db_url, conn, collection_name, embedder, capsys):
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest([
        SourceDocument(external_id="keys", format="text", text="Rotate signing keys every month. Lunch is at noon.")])
    assert main(["--database-url", db_url, "embed-query", "--collection", collection_name, "rotate signing keys"]) == 0
    literal = capsys.readouterr().out.strip()
    vector = np.array(json.loads(literal), dtype=np.float32)
    expected = embedder.embed_query("rotate signing keys")
    assert vector.shape == (embedder.dimension,)
    assert np.allclose(vector, expected / np.linalg.norm(expected), atol=1e-6)
    rows = conn.execute("SELECT external_id, text FROM windowrag.search_windows(%s, 'rotate signing keys', %s::vector,"
                        " k => 1, window_size => 0)", [collection_name, literal]).fetchall()
    assert len(rows) == 1 and rows[0][0] == "keys" and rows[0][1].startswith("Rotate signing keys")


def test_a_file_gets_one_document_id_however_its_path_is_typed(db_url, conn, collection_name, embedder, tmp_path, monkeypatch):
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "a.txt").write_text("The same text. Typed three ways.")
    (tmp_path / "link.txt").symlink_to(texts / "a.txt")
    ingestor = Ingestor(conn, collection=collection_name, embedder=embedder)
    monkeypatch.chdir(tmp_path)
    first = ingestor.ingest(iter_sources(["texts/a.txt"]))
    assert first.added == 1
    again = [ingestor.ingest(iter_sources([str(tmp_path / "texts" / "a.txt")])),
             ingestor.ingest(iter_sources(["texts"])),
             ingestor.ingest(iter_sources(["link.txt"]))]
    monkeypatch.chdir(texts)
    again += [ingestor.ingest(iter_sources(["a.txt"])), ingestor.ingest(iter_sources(["."])),
              ingestor.ingest(iter_sources(["../texts/./a.txt"]))]
    assert [r.unchanged for r in again] == [1] * 6 and all(r.added == r.replaced == 0 for r in again)
    assert count_documents(conn, collection_name) == 1
    stored = conn.execute("SELECT d.external_id, d.source FROM windowrag.documents d JOIN windowrag.collections c"
                          " ON c.id = d.collection_id WHERE c.name = %s", [collection_name]).fetchone()
    assert stored == (str((texts / "a.txt").resolve()),) * 2
    # the CLI deletes it by its path typed any way
    assert main(["--database-url", db_url, "delete", "a.txt", "--collection", collection_name]) == 0
    assert count_documents(conn, collection_name) == 0

