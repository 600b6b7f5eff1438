"""Limits that agree (issue 12, item 6): each limit is defined once (windowrag_pg/limits.py) and
the CLI, the Python API and the SQL functions refuse the same values with a message naming it."""
from __future__ import annotations

import psycopg
import pytest

from windowrag_pg import limits
from windowrag_pg.cli import main
from windowrag_pg.ingest import Ingestor
from windowrag_pg.pipeline import Pipeline, PipelineOptions
from windowrag_pg.retrieve.retriever import QueryError, Retriever
from windowrag_pg.sources import SourceDocument
from windowrag_pg.store.collections import CollectionError

TEXT = ("Signing keys are rotated every month. The security team owns the rotation. Old keys are kept for a week. "
        "Lunch is served at noon. The office closes at six.")


@pytest.fixture()
def small(conn, collection_name, embedder) -> str:
    report = Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id="keys", format="text", text=TEXT)])
    assert report.added == 1
    return collection_name


def test_the_sql_limits_are_the_python_limits(conn):
    rows = conn.execute("SELECT name, low, high, what, why FROM windowrag.search_limits()").fetchall()
    assert {row[0]: limits.Limit(*row) for row in rows} == {name: limits.LIMITS[name] for name in limits.SQL_LIMITS}


BROKEN = [  # (search_windows argument, Python option, value)
    ("candidates", "candidates", 5000),
    ("ef_search", "ef_search", 1001),
    ("k", "k", 10_000),
    ("k", "k", 0),
    ("window_size", "window", 1000),
    ("window_size", "window", -1),
    ("max_sentences", "max_sentences", 10_001),
    ("rrf_k", "rrf_k", 0),
]


@pytest.mark.parametrize(("sql_name", "option", "value"), BROKEN)
def test_python_and_sql_refuse_the_same_values_with_the_same_message(conn, small, embedder, sql_name, option, value):
    expected = limits.problem(option, value)
    assert f"limit {option}" in expected
    with pytest.raises(QueryError) as python_error:
        Retriever(conn, embedder=embedder, collection=small).search("rotate keys", **{option: value})
    assert str(python_error.value) == expected
    with pytest.raises(QueryError) as pipeline_error:
        PipelineOptions(**{option: value})
    assert str(pipeline_error.value) == expected
    embedding = embedder.embed_query("rotate keys")
    with pytest.raises(psycopg.errors.InvalidParameterValue) as sql_error:
        conn.execute(f"SELECT * FROM windowrag.search_windows(%s, 'rotate keys', %s, {sql_name} => %s)",
                     [small, embedding, value])
    assert sql_error.value.diag.message_primary == f"windowrag: {expected}"


def test_the_lower_level_sql_functions_check_the_same_limits(conn, small, embedder):
    embedding = embedder.embed_query("rotate keys")
    cases = [
        ("SELECT * FROM windowrag.dense_search(%s, %s, 10, NULL, 5000)", [small, embedding], "ef_search", 5000),
        ("SELECT * FROM windowrag.dense_search(%s, %s, 1001)", [small, embedding], "candidates", 1001),
        ("SELECT * FROM windowrag.bm25_search(%s, 'keys', 1001)", [small], "candidates", 1001),
        ("SELECT * FROM windowrag.hybrid_search(%s, 'keys', %s, rrf_k => 0)", [small, embedding], "rrf_k", 0),
        ("SELECT * FROM windowrag.sentence_window(1, 101)", [], "window", 101),
        ("SELECT * FROM windowrag.candidate_sentences(%s, 'keys', %s, candidates => 5000)", [small, embedding],
         "candidates", 5000),
    ]
    for statement, params, name, value in cases:
        with pytest.raises(psycopg.errors.InvalidParameterValue) as error:
            conn.execute(statement, params)
        assert error.value.diag.message_primary == f"windowrag: {limits.problem(name, value)}", statement
    # within the limits they run (0 = "no list", as hybrid_search asks in single-list modes)
    assert conn.execute("SELECT count(*) FROM windowrag.bm25_search(%s, 'keys', 0)", [small]).fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM windowrag.dense_search(%s, %s, 1000, NULL, 1000)",
                        [small, embedding]).fetchone()[0] == 5


def test_a_huge_query_with_a_document_filter_gets_the_limit_not_a_stack_overflow(conn, small, embedder):
    words = " ".join(f"w{i}" for i in range(20_000))  # 20,000 words
    with pytest.raises(QueryError, match=r"limit query_chars"):
        Retriever(conn, embedder=embedder, collection=small).search(words, filters={"document_id": "keys"})
    document = conn.execute("SELECT d.id FROM windowrag.documents d JOIN windowrag.collections c ON c.id = d.collection_id"
                            " WHERE c.name = %s", [small]).fetchone()[0]
    with pytest.raises(psycopg.errors.InvalidParameterValue) as error:
        conn.execute("SELECT * FROM windowrag.bm25_search(%s, %s, 10, %s)", [small, words, [document]])
    assert "limit query_chars" in error.value.diag.message_primary
    # the longest query allowed holds the most words (10,000) and runs, filtered, without overflowing
    longest = " ".join("keys" if i % 100 == 0 else chr(98 + i % 24) for i in range(10_000))[:20_000]
    assert len(longest) == limits.LIMITS["query_chars"].high
    rows = conn.execute("SELECT * FROM windowrag.bm25_search(%s, %s, 10, %s)", [small, longest, [document]]).fetchall()
    assert rows


def test_cli_states_and_enforces_the_limits(db_url, small, capsys):
    def run(*options: str) -> tuple[int, str]:
        code = main(["--database-url", db_url, "query", "rotate keys", "--collection", small, *options])
        captured = capsys.readouterr()
        return code, captured.err

    for option, name, value in [("--candidates", "candidates", 5000), ("--max-sentences", "max_sentences", 20_000),
                                ("--rerank-candidates", "rerank_candidates", 0), ("--window", "window", 1000),
                                ("--k", "k", 10_000), ("--token-budget", "token_budget", 100_001),
                                ("--ef-search", "ef_search", 1001)]:
        code, err = run(option, str(value), *(["--rerank"] if name.startswith("rerank") else []))
        assert code == 1 and f"limit {name}" in err and "Traceback" not in err, (option, err)
    with pytest.raises(SystemExit):
        main(["query", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "(1–10000; default: no budget)" in help_text and "(1–1000)" in help_text
    # k within the limit, but the candidate lists (full) held fewer windows: it says so
    code, err = run("--k", "1000", "--candidates", "2", "--window", "0", "--selection", "windows")
    assert code == 0 and "contexts for k=1000: the best 2 sentences of each list made no more windows" in err
    code, err = run("--k", "1000", "--window", "0", "--selection", "windows")  # every sentence was a candidate: nothing more to say
    assert code == 0 and "note" not in err
    assert run("--ef-search", "400")[0] == 0


def test_returned_tokens_are_capped_and_the_trace_says_so(conn, small, embedder, monkeypatch):
    pipeline = Pipeline(conn, collection=small, embedder=embedder)
    whole = pipeline.search("signing keys rotation", k=1, window=100, selection="windows", token_budget=None)
    assert whole.contexts[0].token_count > 10 and whole.trace["notes"] == []
    monkeypatch.setattr("windowrag_pg.pipeline.MAX_RETURNED_TOKENS", 10)  # the real cap is 100,000 tokens
    capped = pipeline.search("signing keys rotation", k=1, window=100, selection="windows", token_budget=None)
    assert sum(c.token_count for c in capped.contexts) <= 10
    assert any("cut to 10 tokens" in note for note in capped.trace["notes"])


@pytest.mark.parametrize("name", ["", "x" * 201])
def test_a_bad_collection_name_gets_the_limit_not_a_check_violation(db_url, conn, embedder, name, tmp_path, capsys):
    with pytest.raises(CollectionError, match="limit collection_name"):
        Ingestor(conn, collection=name, embedder=embedder)
    (tmp_path / "a.txt").write_text("Some text.")
    assert main(["--database-url", db_url, "ingest", str(tmp_path / "a.txt"), "--collection", name]) == 1
    err = capsys.readouterr().err
    assert "limit collection_name" in err and "violates check constraint" not in err
