"""The bulk ingest path (issue 11, item 1): rows first, the collection's HNSW index built once at the
end; the same rows and search results as the incremental path; the automatic choice, the CLI flags,
and the repair of a missing or invalid index (doctor --fix, the next ingest)."""
from __future__ import annotations

import json

import psycopg
import pytest
from psycopg import sql

from windowrag_pg.cli import main
from windowrag_pg.db.sqlfiles import load_sql
from windowrag_pg.doctor import repair_indexes, run_checks
from windowrag_pg.ingest import BULK_MIN_DOCUMENTS, PARSE_AHEAD, Ingestor
from windowrag_pg.retrieve.retriever import Retriever
from windowrag_pg.sources import SourceDocument, iter_sources
from windowrag_pg.store.bm25 import rebuild_bm25
from windowrag_pg.store.collections import (
    collection_centre, collection_index_name, collection_index_state, get_collection, vector_expression,
)

ROWS = """
SELECT d.external_id, d.content_hash, d.text, d.metadata::text, d.sentence_count,
       x.ordinal, x.heading_path, x.start_char, x.end_char, x.first_sentence, x.last_sentence,
       s.ordinal, s.start_char, s.end_char, s.kind, s.text, s.token_count, s.page, s.embedding::text,
       s.tsv::text, s.bm25_length
FROM windowrag.sentences s
JOIN windowrag.documents d ON d.id = s.document_id
JOIN windowrag.sections x ON x.id = s.section_id
JOIN windowrag.collections c ON c.id = s.collection_id
WHERE c.name = %s ORDER BY d.external_id, s.ordinal
"""
BM25 = """
SELECT t.lexeme, t.df FROM windowrag.bm25_terms t JOIN windowrag.collections c ON c.id = t.collection_id
WHERE c.name = %s ORDER BY 1
"""
POSTINGS = """
WITH stored AS (
    SELECT p.collection_id, p.lexeme, p.sentence_id FROM windowrag.bm25_postings p
    UNION ALL
    SELECT b.collection_id, b.lexeme, u.sentence_id FROM windowrag.bm25_blocks b, unnest(b.sentence_ids) u (sentence_id)
)
SELECT p.lexeme, d.external_id, s.ordinal
FROM stored p
JOIN windowrag.sentences s ON s.id = p.sentence_id
JOIN windowrag.documents d ON d.id = s.document_id
JOIN windowrag.collections c ON c.id = p.collection_id
WHERE c.name = %s ORDER BY 1, 2, 3
"""
BLOCKS = """
SELECT b.lexeme, b.block, b.max_impact, b.tfs, b.lengths,
       array(SELECT d.external_id || ':' || s.ordinal FROM unnest(b.sentence_ids) WITH ORDINALITY u (id, i)
             JOIN windowrag.sentences s ON s.id = u.id JOIN windowrag.documents d ON d.id = s.document_id ORDER BY u.i)
FROM windowrag.bm25_blocks b JOIN windowrag.collections c ON c.id = b.collection_id
WHERE c.name = %s ORDER BY 1, 2
"""
STATS = """
SELECT b.n_sentences, b.total_length FROM windowrag.bm25_stats b JOIN windowrag.collections c ON c.id = b.collection_id
WHERE c.name = %s
"""
QUERIES = ["Which information is confidential?", "How long do the obligations last after termination?",
           "return or destroy documents", "governing law and jurisdiction", "may the recipient disclose to employees"]


def small_docs(count: int, prefix: str = "d") -> list[SourceDocument]:
    return [SourceDocument(external_id=f"{prefix}{i}", format="text",
                           text=f"Document {i} talks about topic {i}. It has a second sentence about item {i * 7}.")
            for i in range(count)]


def index_state(conn, name: str) -> str:
    return collection_index_state(conn, get_collection(conn, name))


def dense_plan(conn, name: str) -> str:
    """EXPLAIN of a dense top-10 on the collection with sequential scans and sorts discouraged
    (a small collection's rows can otherwise be sorted by distance through the collection_id
    btree, depending on what else the table holds): names the collection's HNSW index when it is
    there and valid."""
    collection = get_collection(conn, name)
    centre = collection_centre(conn, collection)  # a bulk load centres the index (migration 0022)
    probe = sql.Literal("[" + ",".join(["0"] * (collection.dimension - 1) + ["1"]) + "]")
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_sort = off")
        rows = conn.execute(sql.SQL(
            "EXPLAIN SELECT id FROM windowrag.sentences WHERE collection_id = {} ORDER BY {} <=> {} LIMIT 10").format(
            sql.Literal(collection.id), vector_expression(sql.SQL("embedding"), collection.dimension, centre),
            vector_expression(probe, collection.dimension, centre))).fetchall()
    return "\n".join(r[0] for r in rows)


def test_bulk_and_incremental_store_identical_rows_and_give_identical_results(conn, embedder, eval_dir, collection_name):
    sources = list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:14]
    bulk_name, incremental_name = f"{collection_name}_bulk", f"{collection_name}_incr"
    bulk = Ingestor(conn, collection=bulk_name, embedder=embedder).ingest(sources)
    incremental = Ingestor(conn, collection=incremental_name, embedder=embedder, bulk=False).ingest(sources)
    assert bulk.bulk and not incremental.bulk  # the automatic choice: 14 documents into an empty collection
    assert bulk.added == incremental.added == 14 and not bulk.errors and not incremental.errors
    assert bulk.index_seconds > 0 and incremental.index_seconds == 0
    assert index_state(conn, bulk_name) == index_state(conn, incremental_name) == "valid"
    rows = conn.execute(ROWS, [bulk_name]).fetchall()
    assert len(rows) > 500 and rows == conn.execute(ROWS, [incremental_name]).fetchall()
    assert conn.execute(BM25, [bulk_name]).fetchall() == conn.execute(BM25, [incremental_name]).fetchall()
    # the same postings: packed at the end of the bulk load, rows of the incremental one ...
    assert conn.execute(POSTINGS, [bulk_name]).fetchall() == conn.execute(POSTINGS, [incremental_name]).fetchall()
    assert conn.execute(STATS, [bulk_name]).fetchone() == conn.execute(STATS, [incremental_name]).fetchone()
    assert conn.execute(BLOCKS, [bulk_name]).fetchall() and not conn.execute(BLOCKS, [incremental_name]).fetchall()
    retriever = Retriever(conn, embedder=embedder, collection=bulk_name)
    for query in QUERIES:
        for mode in ("dense", "bm25", "hybrid"):
            a = retriever.search(query, k=5, window=2, mode=mode)
            b = retriever.search(query, k=5, window=2, mode=mode, collection=incremental_name)
            assert [c.text for c in a.contexts] == [c.text for c in b.contexts], (query, mode)
    assert collection_index_name(get_collection(conn, bulk_name)) in dense_plan(conn, bulk_name)
    # ... and packed alike once the incremental collection is packed too
    rebuild_bm25(conn, get_collection(conn, incremental_name))
    assert conn.execute(BLOCKS, [bulk_name]).fetchall() == conn.execute(BLOCKS, [incremental_name]).fetchall()


def test_the_automatic_choice_and_the_python_override(conn, embedder, collection_name):
    few = Ingestor(conn, collection=collection_name, embedder=embedder).ingest(small_docs(BULK_MIN_DOCUMENTS))
    assert not few.bulk and index_state(conn, collection_name) == "valid"  # a handful: incremental

    other = f"{collection_name}_b"
    first = Ingestor(conn, collection=other, embedder=embedder).ingest(small_docs(BULK_MIN_DOCUMENTS + 1))
    assert first.bulk and first.added == BULK_MIN_DOCUMENTS + 1 and index_state(conn, other) == "valid"
    second = Ingestor(conn, collection=other, embedder=embedder).ingest(iter(small_docs(15, prefix="e")))
    assert not second.bulk and second.added == 15  # populated, index valid: incremental
    forced = Ingestor(conn, collection=other, embedder=embedder, bulk=True).ingest(small_docs(1, prefix="f"))
    assert forced.bulk and forced.added == 1 and index_state(conn, other) == "valid"
    assert conn.execute(load_sql("collection_document_count"), [get_collection(conn, other).id]).fetchone()[0] == 27
    with pytest.raises(ValueError, match="bulk must be"):
        Ingestor(conn, collection=other, embedder=embedder, bulk="yes")

    # an index lost (an interrupted bulk load): doctor reports it, --fix / the next ingest builds it
    collection = get_collection(conn, other)
    conn.execute(f"DROP INDEX windowrag.{collection_index_name(collection)}")
    # (checks of this collection and of the server; other tests' collections may be broken on purpose)
    failed = [c for c in run_checks(conn) if not c.ok and (repr(other) in c.name or "'" not in c.name)]
    assert [c.name for c in failed] == [f"HNSW index of {other!r}"] and "missing" in failed[0].detail
    assert other in repair_indexes(conn) and index_state(conn, other) == "valid"
    assert all(c.ok for c in run_checks(conn) if other in c.name)
    # an invalid index of that name (what a failed CREATE INDEX CONCURRENTLY leaves): dropped and rebuilt
    conn.execute(f"DROP INDEX windowrag.{collection_index_name(collection)}")
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {collection_index_name(collection)} ON windowrag.sentences (collection_id)")
    assert index_state(conn, other) == "invalid"
    assert [c for c in run_checks(conn) if c.name == f"HNSW index of {other!r}"][0].detail.startswith("invalid")
    again = Ingestor(conn, collection=other, embedder=embedder).ingest(small_docs(2, prefix="g"))
    assert not again.bulk and index_state(conn, other) == "valid"  # rebuilt before the incremental writes
    conn.execute(f"DROP INDEX windowrag.{collection_index_name(collection)}")
    again = Ingestor(conn, collection=other, embedder=embedder).ingest(small_docs(2, prefix="h"))
    assert not again.bulk and index_state(conn, other) == "valid"  # built before the incremental writes


def test_cli_bulk_flags(db_url, conn, collection_name, tmp_path, capsys):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": d.external_id, "format": "text", "text": d.text}) + "\n"
                            for d in small_docs(BULK_MIN_DOCUMENTS + 2)))
    base = ["--database-url", db_url, "ingest", "--collection", collection_name]
    assert main(base + [str(path), "--no-bulk", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bulk"] is False
    one = tmp_path / "one.txt"
    one.write_text("One more document. Loaded in bulk into a populated collection.")
    assert main(base + [str(one), "--bulk"]) == 0
    out = capsys.readouterr().out
    assert "1 document (1 added" in out and "bulk load, HNSW index built in" in out
    assert index_state(conn, collection_name) == "valid"
    other = f"{collection_name}_auto"
    assert main(["--database-url", db_url, "ingest", str(path), "--collection", other, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bulk"] is True and index_state(conn, other) == "valid"
    with pytest.raises(SystemExit):
        main(["ingest", "--help"])
    assert "--no-bulk" in capsys.readouterr().out


def test_a_bulk_load_parses_ahead_yet_reports_each_bad_document_at_its_turn_and_stops_between_documents(
        conn, embedder, collection_name):
    """A bulk load parses and splits the next documents in a thread (PARSE_AHEAD): each document's
    own error still comes where the document is prepared, in input order, the other documents are
    stored, and should_stop() still ends the load between two committed documents."""
    docs = small_docs(BULK_MIN_DOCUMENTS + PARSE_AHEAD + 6)
    docs[2] = SourceDocument(external_id="broken", format="pdf", data=b"%PDF-1.4 not really")
    docs[5] = SourceDocument(external_id="nothing", format="markdown", text="<!-- a comment -->\n\n---\n")
    docs[PARSE_AHEAD + 4] = SourceDocument(external_id="nul", format="text", text="a \x00 b")
    order: list[str] = []
    report = Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        docs, on_document=lambda name, status, units: order.append(f"{name}:{status}"), batch_units=1)
    assert report.bulk and report.added == len(docs) - 3
    assert [e.name for e in report.errors] == ["broken", "nothing", "nul"]
    assert "PDF" in report.errors[0].message or "pdf" in report.errors[0].message
    assert "no text" in report.errors[1].message and "NUL" in report.errors[2].message
    # one document at a time (batch_units=1): the statuses come in input order
    assert order == [f"{d.external_id}:{'error' if i in (2, 5, PARSE_AHEAD + 4) else 'added'}" for i, d in enumerate(docs)]
    assert index_state(conn, collection_name) == "valid"

    other = f"{collection_name}_stop"
    added: list[str] = []
    stopped = Ingestor(conn, collection=other, embedder=embedder).ingest(
        small_docs(BULK_MIN_DOCUMENTS + PARSE_AHEAD + 6), batch_units=1,
        on_document=lambda name, status, units: added.append(name), should_stop=lambda: len(added) >= 4)
    assert stopped.bulk and stopped.interrupted and stopped.added == 4
    assert conn.execute(load_sql("collection_document_count"), [get_collection(conn, other).id]).fetchone()[0] == 4
    assert index_state(conn, other) == "valid"  # the interrupted load still ends with its index


def test_a_bulk_batch_that_fails_is_written_again_one_by_one_and_only_the_failing_document_is_refused(
        conn, db_url, embedder, collection_name):
    """A bulk load writes each embedded batch in one transaction; when the database refuses it
    (here: another session holds the row of a document being replaced, past lock_timeout), the
    batch is written again one document a transaction: that document gets its own error, the
    others are stored."""
    from windowrag_pg.db.connection import connect

    ingestor = Ingestor(conn, collection=collection_name, embedder=embedder, bulk=True)
    assert ingestor.ingest(small_docs(3)).added == 3
    before = conn.execute(ROWS, [collection_name]).fetchall()
    changed = SourceDocument(external_id="d1", format="text", text="A second version of document one. Two sentences.")
    # over deadlock_timeout (1 s): the index build after the batch may wait for an autovacuum of
    # the sentences, which PostgreSQL cancels only once a lock request has waited that long
    conn.execute("SET lock_timeout = '1500ms'")
    with connect(db_url) as other:
        other.execute("SELECT 1 FROM windowrag.documents d JOIN windowrag.collections c ON c.id = d.collection_id"
                      " WHERE c.name = %s AND d.external_id = 'd1' FOR UPDATE OF d", [collection_name])
        # one embedding batch; the lock is let go once d1 failed (the index build would wait for it)
        report = ingestor.ingest([changed, *small_docs(5, prefix="n")],
                                 on_document=lambda name, status, units: status == "error" and other.rollback())
    assert report.bulk and report.added == 5 and report.replaced == 0
    assert [e.name for e in report.errors] == ["d1"] and "lock timeout" in report.errors[0].message, report.errors
    after = conn.execute(ROWS, [collection_name]).fetchall()
    assert [r for r in after if r[0] in ("d0", "d1", "d2")] == before  # d1 still its first version
    assert sorted({r[0] for r in after}) == ["d0", "d1", "d2", "n0", "n1", "n2", "n3", "n4"]
    assert index_state(conn, collection_name) == "valid"


def test_another_writer_during_a_bulk_load_leaves_exact_bm25_statistics(db_url, conn, embedder, collection_name):
    """A second service's ingest while a bulk load ran saw the deferred statistics (0 sentences),
    took the collection for empty and created its index in place; the bulk load then found the
    index valid and skipped its recount: n_sentences 1 against 73 rows, BM25 blind to its
    documents, no error anywhere."""
    from windowrag_pg.db.connection import connect

    documents = [SourceDocument(external_id=f"d{i}", format="text",
                                text=f"Document {i} is about topic{i}. It has a second sentence. And a third one.")
                 for i in range(BULK_MIN_DOCUMENTS + 2)]
    other = connect(db_url, autocommit=True)
    written = []

    def meanwhile(document_id, status, units):
        if document_id == "d0" and not written:
            written.append(Ingestor(other, collection=collection_name, embedder=embedder).ingest([
                SourceDocument(external_id="other", format="text", text="Written by another instance. Meanwhile.")]))

    try:
        report = Ingestor(conn, collection=collection_name, embedder=embedder).ingest(documents, on_document=meanwhile)
    finally:
        other.close()
    assert report.bulk and not report.errors and written and not written[0].errors
    rows = conn.execute("SELECT count(*) FROM windowrag.sentences s JOIN windowrag.collections c ON c.id = s.collection_id"
                        " WHERE c.name = %s", [collection_name]).fetchone()[0]
    counted = conn.execute("SELECT b.n_sentences FROM windowrag.bm25_stats b JOIN windowrag.collections c"
                           " ON c.id = b.collection_id WHERE c.name = %s", [collection_name]).fetchone()[0]
    assert counted == rows == 3 * len(documents) + 2
    bm25 = [c for c in run_checks(conn) if c.name.startswith("BM25 statistics") and collection_name in c.name]
    assert bm25 and all(c.ok for c in bm25), bm25
    found = Retriever(conn, embedder=embedder, collection=collection_name).search("topic7", k=1, mode="bm25")
    assert [c.document_id for c in found.contexts] == ["d7"]


def test_two_index_builds_at_once_on_two_collections_both_finish(db_url, conn, embedder, collection_name):
    """Every collection's index is on the shared sentences table: two CREATE INDEX CONCURRENTLY at
    once deadlocked (one waits for the table lock inside its transaction, the other for that
    transaction). Two bulk loads into two new collections left one index invalid 4 times in 4.
    Here another session's open snapshot holds the first build in its waits while the second
    starts (before the fix: a deadlock in 2 rounds of 3); each build now waits its turn
    (store.collections.index_ddl_turn)."""
    import threading
    import time

    from windowrag_pg.db.connection import connect
    from windowrag_pg.store.collections import build_collection_index, drop_collection_index

    names = [f"{collection_name}_a", f"{collection_name}_b"]
    for name in names:
        Ingestor(conn, collection=name, embedder=embedder, bulk=True).ingest(small_docs(12, prefix=name))

    def build(name: str, failures: list[BaseException]) -> None:
        try:
            with connect(db_url, autocommit=True) as own:
                build_collection_index(own, get_collection(own, name))
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    for _ in range(3):
        for name in names:
            drop_collection_index(conn, get_collection(conn, name))
        failures: list[BaseException] = []
        snapshot_holder = connect(db_url, autocommit=True)
        snapshot_holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        snapshot_holder.execute("SELECT count(*) FROM windowrag.collections").fetchone()
        threads = [threading.Thread(target=build, args=(name, failures)) for name in names]
        try:
            threads[0].start()
            time.sleep(1.0)  # the first build now waits for the open snapshot
            threads[1].start()
            time.sleep(1.0)  # the second asks for its turn (it waited for the table lock, in a transaction)
        finally:
            snapshot_holder.execute("COMMIT")
            snapshot_holder.close()
        for thread in threads:
            thread.join(60)
        assert not any(thread.is_alive() for thread in threads)
        assert failures == []
        assert [index_state(conn, name) for name in names] == ["valid", "valid"]
