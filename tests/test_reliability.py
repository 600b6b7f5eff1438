"""Crash safety and concurrency against the real embedded server (slow: run by .ci/run -m slow)."""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

from windowrag_pg.db.sqlfiles import load_sql

from .reliability_workers import document_text, reader, writer
from .test_bulk_ingest import dense_plan

pytestmark = pytest.mark.slow

CONSISTENCY = """
SELECT count(*) FILTER (WHERE d.sentence_count <> coalesce(s.n, 0)),
       count(*) FILTER (WHERE coalesce(s.null_vectors, 0) > 0),
       count(*) FILTER (WHERE x.sections IS NULL)
FROM windowrag.documents d
JOIN windowrag.collections c ON c.id = d.collection_id
LEFT JOIN (SELECT document_id, count(*) AS n, count(*) FILTER (WHERE embedding IS NULL) AS null_vectors
           FROM windowrag.sentences GROUP BY 1) s ON s.document_id = d.id
LEFT JOIN (SELECT document_id, count(*) AS sections FROM windowrag.sections GROUP BY 1) x ON x.document_id = d.id
WHERE c.name = %s
"""


def bm25_mismatches(conn, collection: str) -> tuple[int, int, int]:
    for name, *counts in conn.execute(load_sql("bm25_consistency")).fetchall():
        if name == collection:
            return tuple(counts)
    raise AssertionError(f"no collection {collection}")


def stored_ids(conn, collection: str) -> set[str]:
    return {r[0] for r in conn.execute(
        "SELECT d.external_id FROM windowrag.documents d JOIN windowrag.collections c ON c.id = d.collection_id"
        " WHERE c.name = %s", [collection])}


def test_sigkill_mid_ingest_leaves_no_partial_document(conn, db_url, tmp_path, collection_name):
    path = tmp_path / "docs.jsonl"
    with path.open("w") as handle:
        for doc in range(1000):
            handle.write(json.dumps({"id": f"doc-{doc}", "title": f"Doc {doc}", "format": "text",
                                     "text": document_text(doc, 1), "metadata": {"n": doc}}) + "\n")
    # the incremental path (BM25 exact after every document); the bulk path's kill is tested below
    command = [sys.executable, "-m", "windowrag_pg.cli", "--database-url", db_url, "ingest", str(path),
               "--collection", collection_name, "--no-bulk"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen_before_kill: set[str] = set()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(seen_before_kill) < 150:
        time.sleep(0.2)
        exists = conn.execute("SELECT 1 FROM windowrag.collections WHERE name = %s", [collection_name]).fetchone()
        if exists:
            seen_before_kill = stored_ids(conn, collection_name)
    assert process.poll() is None, "the ingest finished before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    after = stored_ids(conn, collection_name)
    assert seen_before_kill <= after, "a committed document was lost"
    assert len(after) < 1000
    assert conn.execute(CONSISTENCY, [collection_name]).fetchone() == (0, 0, 0)
    assert bm25_mismatches(conn, collection_name) == (0, 0, 0)

    rerun = subprocess.run(command + ["--json"], capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["unchanged"] == len(after) and report["added"] == 1000 - len(after)
    assert len(stored_ids(conn, collection_name)) == 1000
    duplicates = conn.execute(
        "SELECT count(*) FROM (SELECT document_id, ordinal FROM windowrag.sentences GROUP BY 1, 2 HAVING count(*) > 1) d"
    ).fetchone()[0]
    assert duplicates == 0
    assert conn.execute(CONSISTENCY, [collection_name]).fetchone() == (0, 0, 0)
    assert bm25_mismatches(conn, collection_name) == (0, 0, 0)


def test_four_writers_and_eight_readers_for_a_minute(conn, db_url, embedder, collection_name):
    from windowrag_pg.ingest import Ingestor
    from windowrag_pg.sources import SourceDocument

    n_docs = 40
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id=f"doc-{d}", format="text", text=document_text(d, 0)) for d in range(n_docs)])
    vectors = [(q, embedder.embed_query(q).tolist()) for q in
               ("which record describes item 7", "final line of the record", "edition marks", "item number 12")]
    seconds = float(os.environ.get("WINDOWRAG_CONCURRENCY_SECONDS", "60"))
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    processes = [context.Process(target=writer, args=(db_url, collection_name, seed, seconds, n_docs, queue))
                 for seed in range(4)]
    processes += [context.Process(target=reader, args=(db_url, collection_name, 100 + seed, seconds, vectors, queue))
                  for seed in range(8)]
    for process in processes:
        process.start()
    results = [queue.get(timeout=seconds + 600) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    errors = [e for _, _, errs in results for e in errs]
    assert errors == []
    writes = sum(n for kind, n, _ in results if kind == "writer")
    searches = sum(n for kind, n, _ in results if kind == "reader")
    assert writes > 20 and searches > 100, (writes, searches)
    duplicates = conn.execute(
        "SELECT count(*) FROM (SELECT s.document_id, s.ordinal FROM windowrag.sentences s JOIN windowrag.collections c"
        " ON c.id = s.collection_id WHERE c.name = %s GROUP BY 1, 2 HAVING count(*) > 1) d", [collection_name]).fetchone()[0]
    assert duplicates == 0
    assert conn.execute(CONSISTENCY, [collection_name]).fetchone() == (0, 0, 0)
    assert bm25_mismatches(conn, collection_name) == (0, 0, 0)
    print(f"\n{writes} writes, {searches} searches in {seconds:.0f} s")


def test_sigkill_mid_bulk_load_then_doctor_reports_and_the_next_ingest_builds_the_index(conn, db_url, eval_dir, collection_name):
    """A bulk load (61 contracts into an empty collection: chosen automatically) killed once documents
    are being written: each document is whole or absent; the collection's HNSW index missing and its
    BM25 statistics not yet counted (a bulk load defers them to its end); `windowrag doctor` says so
    (exit 1); the same command then stores the rest, still in bulk, counts the statistics exactly,
    builds the index, and a dense query is planned on it."""
    from windowrag_pg.store.collections import collection_index_name, collection_index_state, get_collection

    source = eval_dir / "contractnli-dev" / "documents.jsonl"
    base = [sys.executable, "-m", "windowrag_pg.cli", "--database-url", db_url]
    command = base + ["ingest", str(source), "--collection", collection_name]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen_before_kill: set[str] = set()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not seen_before_kill and process.poll() is None:
        time.sleep(0.05)
        if conn.execute("SELECT 1 FROM windowrag.collections WHERE name = %s", [collection_name]).fetchone():
            seen_before_kill = stored_ids(conn, collection_name)
    assert process.poll() is None, "the ingest finished before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    after = stored_ids(conn, collection_name)
    assert seen_before_kill <= after and 0 < len(after) < 61
    assert conn.execute(CONSISTENCY, [collection_name]).fetchone() == (0, 0, 0)
    assert bm25_mismatches(conn, collection_name) != (0, 0, 0)  # deferred to the end of the load
    collection = get_collection(conn, collection_name)
    assert collection_index_state(conn, collection) in ("missing", "invalid")

    doctor = subprocess.run(base + ["doctor"], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "COLUMNS": "200"})
    assert doctor.returncode == 1
    assert f"FAIL HNSW index of '{collection_name}'" in doctor.stdout and "doctor --fix" in doctor.stdout
    assert f"FAIL BM25 statistics of '{collection_name}'" in doctor.stdout

    rerun = subprocess.run(command + ["--json"], capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["bulk"] is True  # the index was missing: the load goes on in bulk
    assert report["unchanged"] == len(after) and report["added"] == 61 - len(after)
    assert conn.execute(CONSISTENCY, [collection_name]).fetchone() == (0, 0, 0)
    assert bm25_mismatches(conn, collection_name) == (0, 0, 0)
    assert collection_index_state(conn, collection) == "valid"
    assert collection_index_name(collection) in dense_plan(conn, collection_name)  # the centred index's expression
    doctor = subprocess.run(base + ["doctor"], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "COLUMNS": "200"})
    assert f"FAIL HNSW index of '{collection_name}'" not in doctor.stdout
    assert f"FAIL BM25 statistics of '{collection_name}'" not in doctor.stdout
