"""Operations: `windowrag doctor` and the statement timeout, on the real database."""
from __future__ import annotations

import subprocess
import sys

import psycopg
import pytest

from windowrag_pg.db.connection import connect
from windowrag_pg.doctor import dense_recall, run_checks
from windowrag_pg.ingest import Ingestor
from windowrag_pg.retrieve.retriever import Retriever
from windowrag_pg.sources import SourceDocument


def test_doctor_passes_then_finds_drifted_bm25_statistics(conn, collection_name, embedder):
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id="d", format="text", text="Alpha beta gamma. Beta gamma delta. Gamma delta.")])
    mine = [c for c in run_checks(conn) if collection_name in c.name]
    assert mine and all(c.ok for c in mine), mine
    assert all(c.ok for c in run_checks(conn) if c.name in ("server", "pgvector", "migrations", "indexes valid"))
    conn.execute("UPDATE windowrag.bm25_terms t SET df = df + 1 FROM windowrag.collections c"
                 " WHERE c.id = t.collection_id AND c.name = %s AND t.lexeme = 'gamma'", [collection_name])
    broken = [c for c in run_checks(conn) if c.name == f"BM25 statistics of {collection_name!r}"]
    assert broken and not broken[0].ok and "terms 1" in broken[0].detail and broken[0].fix


def test_statement_timeout_cancels_and_the_cli_says_so(db_url, monkeypatch, contractnli_collection, embedder):
    monkeypatch.setenv("WINDOWRAG_STATEMENT_TIMEOUT_MS", "1")
    with connect(db_url, autocommit=True) as slow:
        assert slow.execute("SHOW statement_timeout").fetchone()[0] == "1ms"
        with pytest.raises(psycopg.errors.QueryCanceled):
            Retriever(slow, embedder=embedder, collection=contractnli_collection).search(
                "confidential information disclosed to third parties", k=10, window=5)
    out = subprocess.run([sys.executable, "-m", "windowrag_pg.cli", "--database-url", db_url, "query",
                          "confidential information", "--collection", contractnli_collection],
                         capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "WINDOWRAG_STATEMENT_TIMEOUT_MS": "1"})
    assert out.returncode == 1
    # "due to statement timeout", or "due to user request" when the timeout reaches a parallel
    # worker first: either way the CLI names the timeout in force
    assert "database error: canceling statement due to" in out.stderr
    assert "(the statement timeout is 1 ms: WINDOWRAG_STATEMENT_TIMEOUT_MS)" in out.stderr
    assert "Traceback" not in out.stderr


def test_doctor_recall_measures_the_dense_leg_against_an_exact_scan(db_url, contractnli_collection, embedder):
    with connect(db_url, autocommit=True) as conn:
        own = dense_recall(conn, contractnli_collection, ef_searches=(400,), sample=20)
        assert (own.queries, own.own_sentences, own.k) == (20, True, 5)
        # each sentence is left out of its own results: were it counted on one side only, a slot in
        # five would be lost (0.8); a wide search over ~4,300 sentences finds the rest
        assert own.recall[400] >= 0.95
        questions = [embedder.embed_query(q) for q in ("Who may receive confidential information?",
                                                       "How long do the obligations last?")]
        asked = dense_recall(conn, contractnli_collection, ef_searches=(40, 400), query_embeddings=questions)
        assert (asked.queries, asked.own_sentences) == (2, False)
        assert set(asked.recall) == {40, 400} and all(0.0 <= r <= 1.0 for r in asked.recall.values())
        assert asked.recall[400] >= 0.9 and asked.exact_ms > 0
        with pytest.raises(ValueError, match="no query"):
            dense_recall(conn, contractnli_collection, query_embeddings=[])


def test_doctor_cli_prints_recall_and_names_bad_recall_arguments(db_url, contractnli_collection, tmp_path):
    def doctor(*arguments):
        return subprocess.run([sys.executable, "-m", "windowrag_pg.cli", "--database-url", db_url, "doctor",
                               *arguments], capture_output=True, text=True, timeout=300)

    questions = tmp_path / "questions.txt"
    questions.write_text("Who may receive confidential information?\n\nWhen must information be returned?\n")
    out = doctor("--recall", contractnli_collection, "--recall-queries", str(questions), "--ef-search", "40,400")
    assert "2 questions of" in out.stdout and "ef_search   40: recall@5" in out.stdout
    assert "ef_search  400: recall@5" in out.stdout, out.stdout + out.stderr
    bad = doctor("--recall", contractnli_collection, "--ef-search", "100,5000")
    assert bad.returncode == 2 and "5000 is above 1000" in bad.stderr
    missing = doctor("--recall", contractnli_collection, "--recall-queries", str(tmp_path / "none.txt"))
    assert missing.returncode == 1 and "cannot read" in missing.stderr and "none.txt" in missing.stderr
    unknown = doctor("--recall", "no_such_collection")
    assert unknown.returncode == 1 and "'no_such_collection' does not exist" in unknown.stderr
    assert "ok" not in unknown.stdout  # said before the checks run
    assert "Traceback" not in bad.stderr + missing.stderr + unknown.stderr
    alone = doctor("--ef-search", "40", "--recall-sample", "9")  # found by a tester: ignored without a word
    assert alone.returncode == 1 and "--recall-sample, --ef-search apply with --recall COLLECTION" in alone.stderr


def test_doctor_finds_and_fix_fills_the_gaps_a_downgrade_emptied(db_url, conn, collection_name, embedder):
    """Found by a tester: a downgrade below migration 0014 and an upgrade left every sentence's gap
    (the text to the next sentence) NULL; the default selection then chose other contexts, and
    neither a re-ingest ("unchanged") nor doctor noticed. Doctor names the sentences and --fix
    reads their gaps from the documents' text by split/gaps.py's rule: the same as written."""
    text = "# Leave\n\nAsk your manager first.\n\n- Parental leave: 16 weeks.\n- Sick leave: paid.\n\nThat is all."
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id="leave.md", format="markdown", text=text)])
    query = ("SELECT s.ordinal, s.gap FROM windowrag.sentences s JOIN windowrag.collections c"
             " ON c.id = s.collection_id WHERE c.name = %s ORDER BY s.ordinal")
    written = conn.execute(query, [collection_name]).fetchall()
    assert any(gap not in ("", None) and gap.strip() for _, gap in written)  # markup between units
    conn.execute("UPDATE windowrag.sentences s SET gap = NULL FROM windowrag.collections c"  # as the round trip left it
                 " WHERE c.id = s.collection_id AND c.name = %s", [collection_name])
    check = next(c for c in run_checks(conn) if c.name == "text between sentences stored")
    assert not check.ok and f"{collection_name!r}: {len(written)} sentences" in check.detail
    fixed = subprocess.run([sys.executable, "-m", "windowrag_pg.cli", "--database-url", db_url, "doctor", "--fix"],
                           capture_output=True, text=True, timeout=600)
    assert f"fixed text between sentences of {collection_name!r}" in fixed.stdout, fixed.stdout + fixed.stderr
    assert conn.execute(query, [collection_name]).fetchall() == written
    assert next(c for c in run_checks(conn) if c.name == "text between sentences stored").ok


def test_doctor_passes_a_small_packed_blocks_table_read_whole(db_url, embedder):
    """Found by a tester: after a pack and ANALYZE, a blocks table of 3 pages was read whole by
    the planner, rightly, and doctor said FAIL "not used" with ANALYZE as the fix, which could not
    clear it (exit 1 on a healthy database)."""
    from windowrag_pg.store.bm25 import rebuild_bm25
    from windowrag_pg.store.collections import get_collection

    from .conftest import scratch_database

    with scratch_database(db_url, "doctor_small_blocks") as url, connect(url, autocommit=True) as conn:
        Ingestor(conn, collection="small", embedder=embedder).ingest(
            [SourceDocument(external_id="d", format="text", text="Alpha beta gamma. Beta gamma delta. Gamma delta.")])
        rebuild_bm25(conn, get_collection(conn, "small"))
        conn.execute("ANALYZE windowrag.bm25_blocks")
        check = next(c for c in run_checks(conn) if c.name == "BM25 blocks index for 'small'")
        assert check.ok and not check.fix, check

