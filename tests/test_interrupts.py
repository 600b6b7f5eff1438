"""Ctrl-C during `windowrag ingest` (issue 12, item 8): a real subprocess, a real SIGINT to its
process group (what a terminal sends). It stops after the document it is writing, prints the
summary of what was stored, exits 130, and leaves only whole documents."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psycopg
import pytest

SENTENCES = ["Invoices are paid within thirty days of receipt.", "Each team owns a budget for its tools.",
             "Travel is booked through the company portal.", "Receipts are kept for seven years."]


def write_documents(path, count: int) -> None:
    with path.open("w") as handle:
        for number in range(count):
            text = " ".join(f"{s[:-1]} (policy {number}, clause {i})." for i, s in enumerate(SENTENCES))
            handle.write(json.dumps({"id": f"doc-{number}", "text": text}) + "\n")


def stored(db_url: str, collection: str) -> tuple[int, int]:
    """(documents, documents whose sentences are not all there)."""
    with psycopg.connect(db_url) as conn:
        return conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE d.sentence_count <> (SELECT count(*) FROM windowrag.sentences s"
            " WHERE s.document_id = d.id)) FROM windowrag.documents d JOIN windowrag.collections c"
            " ON c.id = d.collection_id WHERE c.name = %s", [collection]).fetchone()


def start_ingest(db_url: str, path, collection: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "windowrag_pg.cli", "--database-url", db_url, "ingest", str(path),
         "--collection", collection],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


@pytest.mark.slow
@pytest.mark.parametrize("when", ["while writing", "while embedding"])
def test_ctrl_c_stops_cleanly_prints_what_was_stored_and_exits_130(db_url, collection_name, tmp_path, when):
    path = tmp_path / "docs.jsonl"
    # 700: 2,800 sentences, a first embedding batch of 2,048, then the writes. While embedding,
    # 1,500 (6,000 sentences, three batches): on an idle machine the 8 s below reached the last
    # batch of 700 documents, which was then written whole
    count = 1500 if when == "while embedding" else 700
    write_documents(path, count)
    process = start_ingest(db_url, path, collection_name)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and process.poll() is None:
        if when == "while embedding":
            time.sleep(8)  # model loaded, the first batch being embedded
            break
        try:
            if stored(db_url, collection_name)[0] > 0:
                break
        except psycopg.Error:
            pass  # the collection is not created yet
        time.sleep(0.05)
    assert process.poll() is None, "the ingest ended before it could be interrupted"
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    documents, incomplete = stored(db_url, collection_name)
    assert f"{documents} documents ({documents} added" in out, (out, err)
    assert f"interrupted: the {documents} documents above are stored" in err
    assert documents < count and incomplete == 0
    assert "another command is already in progress" not in err and "Traceback" not in err
    if when != "while writing":
        return
    # the same command goes on where it stopped: the stored ones are unchanged, the rest added
    done = subprocess.run(
        [sys.executable, "-m", "windowrag_pg.cli", "--database-url", db_url, "ingest", str(path),
         "--collection", collection_name, "--json"], capture_output=True, text=True, timeout=900)
    report = json.loads(done.stdout)
    assert done.returncode == 0 and (report["unchanged"], report["added"]) == (documents, 700 - documents)
    assert stored(db_url, collection_name) == (700, 0)
