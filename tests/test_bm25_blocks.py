"""Compact BM25 (migration 0011): postings packed in impact-ordered blocks, rows for what was
written since the last pack; the same exact scores either way (rank-bm25 itself is compared in
test_retrieval.py, on a collection packed by its bulk load)."""
from __future__ import annotations

import pytest

from windowrag_pg.db.sqlfiles import load_sql
from windowrag_pg.doctor import repair_bm25, run_checks
from windowrag_pg.ingest import Ingestor
from windowrag_pg.sources import SourceDocument
from windowrag_pg.store.bm25 import pack_due, pack_if_due, rebuild_bm25
from windowrag_pg.store.collections import get_collection
from windowrag_pg.store.writer import delete_document

QUERIES = ["harbour crane", "crane inspection", "river barge cargo", "weekly report", "cargo"]


def port_documents(count: int, prefix: str = "port") -> list[SourceDocument]:
    """Sentences that share a few common terms (crane: one in every sentence, > 128 postings)."""
    words = ["harbour", "river", "barge", "cargo", "inspection", "weekly", "report", "diesel", "tide"]
    documents = []
    for d in range(count):
        sentences = [f"Crane {d}-{i} moved {words[i % 9]} and {words[(i * d + 3) % 9]} "
                     f"{'cargo ' * (i % 4)}near berth {i}." for i in range(12)]
        documents.append(SourceDocument(external_id=f"{prefix}{d}", format="text", text=" ".join(sentences)))
    return documents


def bm25_results(conn, name: str, *, n: int = 20, **options) -> list[list[tuple[int, float]]]:
    extra = "".join(f", {key} => {int(value)}" for key, value in options.items())
    return [conn.execute(f"SELECT sentence_id, score FROM windowrag.bm25_search(%s, %s, {n}{extra})",
                         [name, query]).fetchall() for query in QUERIES]


def counters(conn, name: str) -> tuple[int, int, int]:
    return conn.execute(load_sql("bm25_pack_due"), [get_collection(conn, name).id]).fetchone()


def mismatches(conn, name: str) -> tuple[int, int, int]:
    return next(tuple(r[1:]) for r in conn.execute(load_sql("bm25_consistency")).fetchall() if r[0] == name)


def test_pack_due_rule():
    assert not pack_due(0, 0, 0)
    assert not pack_due(49_999, 0, 0)
    assert pack_due(50_000, 0, 0) and pack_due(30_000, 20_000, 0)
    assert not pack_due(99_999, 0, 1_000_000) and pack_due(100_000, 0, 1_000_000)
    assert pack_due(10, 10, 100, min_postings=1)


def test_packing_keeps_every_score_and_the_order_of_impacts(conn, embedder, collection_name):
    report = Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(15))
    assert not report.errors and report.sentences == 180
    pending, stale, packed = counters(conn, collection_name)
    assert pending > 180 and stale == 0 and packed == 0  # below the pack threshold: rows
    before = bm25_results(conn, collection_name)
    cut_before = bm25_results(conn, collection_name, n=5, per_term_limit=10, shortlist_size=20)

    assert rebuild_bm25(conn, get_collection(conn, collection_name)) == pending
    assert counters(conn, collection_name) == (0, 0, pending)
    cid = get_collection(conn, collection_name).id
    assert conn.execute("SELECT count(*) FROM windowrag.bm25_postings WHERE collection_id = %s", [cid]).fetchone()[0] == 0
    assert mismatches(conn, collection_name) == (0, 0, 0)
    assert bm25_results(conn, collection_name) == before
    # cut lists: the candidates may differ (impacts now at the final average length), scores stay exact
    for got, earlier in zip(bm25_results(conn, collection_name, n=5, per_term_limit=10, shortlist_size=20), cut_before):
        assert len(got) == 5 and [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        exact = dict(row for rows in before for row in rows)
        assert all(exact.get(sid, score) == pytest.approx(score) for sid, score in got)

    blocks = conn.execute(
        "SELECT block, max_impact, impacts, cardinality(sentence_ids) FROM windowrag.bm25_blocks"
        " WHERE collection_id = %s AND lexeme = 'crane' ORDER BY block", [cid]).fetchall()
    assert [b[0] for b in blocks] == [0, 1] and [b[3] for b in blocks] == [128, 52]  # 180 sentences
    impacts = [i for b in blocks for i in b[2]]
    assert impacts == sorted(impacts, reverse=True) and all(b[1] == b[2][0] for b in blocks)


def test_deleted_sentences_leave_the_results_and_the_next_pack(conn, embedder, collection_name):
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(15))
    collection = get_collection(conn, collection_name)
    rebuild_bm25(conn, collection)
    gone = {r[0] for r in conn.execute(
        "SELECT s.id FROM windowrag.sentences s JOIN windowrag.documents d ON d.id = s.document_id"
        " WHERE d.collection_id = %s AND d.external_id IN ('port0', 'port1')", [collection.id]).fetchall()}
    assert delete_document(conn, collection, "port0") and delete_document(conn, collection, "port1")
    pending, stale, _ = counters(conn, collection_name)
    assert pending == 0 and stale > 0
    assert mismatches(conn, collection_name) == (0, 0, 0)  # stale packed postings are skipped
    results = bm25_results(conn, collection_name, n=200)
    assert all(sid not in gone for rows in results for sid, _ in rows)
    assert len(results[0]) == 180 - 24  # every remaining 'crane' sentence

    # new rows beside the blocks: read from both; a pack folds them in and drops the stale ones
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(2, prefix="new"))
    pending, stale, _ = counters(conn, collection_name)
    assert pending > 0 and stale > 0
    mixed = bm25_results(conn, collection_name)
    assert pack_if_due(conn, collection) is False  # far below 50,000 postings
    rebuild_bm25(conn, collection)
    live = conn.execute("SELECT sum(length(tsv)) FROM windowrag.sentences WHERE collection_id = %s",
                        [collection.id]).fetchone()[0]
    assert counters(conn, collection_name) == (0, 0, live)
    assert bm25_results(conn, collection_name) == mixed
    assert mismatches(conn, collection_name) == (0, 0, 0)


def test_a_bulk_write_defers_the_statistics_and_the_rebuild_counts_them(conn, embedder, collection_name):
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(3))
    collection = get_collection(conn, collection_name)
    with conn.transaction():
        conn.execute(load_sql("defer_bm25"))
        conn.execute("DELETE FROM windowrag.documents WHERE collection_id = %s AND external_id = 'port0'",
                     [collection.id])
    assert mismatches(conn, collection_name) != (0, 0, 0)  # the triggers skipped the delete
    conn.execute("SELECT 1")  # the setting was transaction-local: this delete is counted
    assert delete_document(conn, collection, "port1")
    rebuild_bm25(conn, collection)
    assert mismatches(conn, collection_name) == (0, 0, 0)
    assert counters(conn, collection_name)[0] == 0


def test_doctor_reports_posting_rows_due_and_fix_packs_them(conn, embedder, collection_name):
    """A tenant role's ingests never pack; doctor names a collection whose rows are due (here the
    counter is raised by hand: 50,000 postings would take thousands of sentences) and --fix packs."""
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(2))
    collection = get_collection(conn, collection_name)
    check_name = f"BM25 postings of {collection_name!r} packed"
    [check] = [c for c in run_checks(conn) if c.name == check_name]
    assert check.ok and " as rows" in check.detail
    conn.execute("UPDATE windowrag.bm25_stats SET pending_postings = pending_postings + 60000 WHERE collection_id = %s",
                 [collection.id])
    [check] = [c for c in run_checks(conn) if c.name == check_name]
    assert not check.ok and "doctor --fix" in check.fix
    assert collection_name in repair_bm25(conn)
    assert counters(conn, collection_name)[:2] == (0, 0)
    assert all(c.ok for c in run_checks(conn) if repr(collection_name) in c.name)
    assert collection_name not in repair_bm25(conn)
