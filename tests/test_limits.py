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
    # the same limit and words, naming the argument as SQL spells it: window_size, not the option
    # `window` (migration 0032; "window must be ..." read as a mistake at a window_size argument)
    assert sql_error.value.diag.message_primary == f"windowrag: {sql_name}{expected.removeprefix(option)}"


def test_the_lower_level_sql_functions_check_the_same_limits(conn, small, embedder):
    embedding = embedder.embed_query("rotate keys")
    cases = [
        ("SELECT * FROM windowrag.dense_search(%s, %s, 10, NULL, 5000)", [small, embedding], "ef_search", 5000),
        ("SELECT * FROM windowrag.hybrid_search(%s, 'keys', %s, rrf_k => 0)", [small, embedding], "rrf_k", 0),
        ("SELECT * FROM windowrag.sentence_window(1, 101)", [], "window_size", 101),
        ("SELECT * FROM windowrag.candidate_sentences(%s, 'keys', %s, candidates => 5000)", [small, embedding],
         "candidates", 5000),
    ]
    for statement, params, name, value in cases:
        with pytest.raises(psycopg.errors.InvalidParameterValue) as error:
            conn.execute(statement, params)
        limit = "window" if name == "window_size" else name  # (the SQL argument of limit window)
        message = f"{name}{limits.problem(limit, value).removeprefix(limit)}"
        assert error.value.diag.message_primary == f"windowrag: {message}", statement
    # a list's length n is named as the argument it is (0 = "no list", as hybrid_search asks in
    # single-list modes)
    for function, params in [("dense_search", [small, embedding]), ("bm25_search", [small, "keys"])]:
        placeholders = ", ".join(["%s"] * len(params))
        with pytest.raises(psycopg.errors.InvalidParameterValue) as error:
            conn.execute(f"SELECT * FROM windowrag.{function}({placeholders}, 1001)", params)
        assert error.value.diag.message_primary == f"windowrag.{function}: n must be a number from 0 to 1000, not 1001"
    # within the limits they run
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


def test_sql_functions_name_null_and_out_of_range_arguments(conn, small, embedder):
    """Until migration 0027 a NULL k, n, rrf_k, clamp, ... silently changed the results (every row,
    scores of 0, windows across sections) and k1 => -1 or b => 5 gave meaningless scores."""
    embedding = embedder.embed_query("rotate keys")
    nulls = [
        ("SELECT * FROM windowrag.search_windows(%s, 'keys', %s, k => NULL, rrf_k => NULL)", [small, embedding],
         "windowrag.search_windows: k, rrf_k must not be NULL"),
        ("SELECT * FROM windowrag.search_windows(%s, 'keys', %s, clamp => NULL)", [small, embedding],
         "windowrag.search_windows: clamp must not be NULL"),
        ("SELECT * FROM windowrag.bm25_search(%s, 'keys', NULL)", [small], "windowrag.bm25_search: n must not be NULL"),
        ("SELECT * FROM windowrag.dense_search(%s, %s, 5, NULL, NULL)", [small, embedding],
         "windowrag.dense_search: ef_search must not be NULL"),
        ("SELECT * FROM windowrag.hybrid_search(%s, 'keys', %s, mode => NULL)", [small, embedding],
         "windowrag.hybrid_search: mode must not be NULL"),
        ("SELECT * FROM windowrag.candidate_sentences(%s, 'keys', %s, radius => NULL)", [small, embedding],
         "windowrag.candidate_sentences: radius must not be NULL"),
        ("SELECT * FROM windowrag.sentence_window(1, NULL)", [], "windowrag.sentence_window: window_size must not be NULL"),
        ("SELECT * FROM windowrag.bm25_search(NULL, 'keys')", [], "windowrag: collection is NULL"),
    ]
    for statement, params, message in nulls:
        with pytest.raises(psycopg.errors.NullValueNotAllowed) as error:
            conn.execute(statement, params)
        assert error.value.diag.message_primary.startswith(message), statement
    out_of_range = [
        ("SELECT * FROM windowrag.bm25_search(%s, 'keys', 5, k1 => -1)", [small],
         "windowrag.bm25_search: k1 must be a finite number of at least 0, not -1"),
        ("SELECT * FROM windowrag.bm25_search(%s, 'keys', 5, k1 => 'NaN')", [small],
         "windowrag.bm25_search: k1 must be a finite number of at least 0, not NaN"),
        ("SELECT * FROM windowrag.bm25_search(%s, 'keys', 5, b => 5)", [small],
         "windowrag.bm25_search: b must be a number from 0 to 1, not 5"),
        ("SELECT * FROM windowrag.bm25_search(%s, 'keys', 5, per_term_limit => 0)", [small],
         "windowrag.bm25_search: per_term_limit must be a finite number of at least 1, not 0"),
        ("SELECT * FROM windowrag.bm25_search(%s, 'keys', 5, shortlist_size => -1)", [small],
         "windowrag.bm25_search: shortlist_size must be a finite number of at least 1, not -1"),
        ("SELECT * FROM windowrag.hybrid_search(%s, 'keys', %s, bm25_weight => -1)", [small, embedding],
         "windowrag.hybrid_search: bm25_weight must be a finite number of at least 0, not -1"),
        ("SELECT * FROM windowrag.candidate_sentences(%s, 'keys', %s, radius => 2147483647)", [small, embedding],
         "windowrag.candidate_sentences: radius must be a number from 0 to 1000, not 2147483647"),
        ("SELECT * FROM windowrag.sentence_window(1, 3, 'bogus')", [],
         "windowrag: clamp must be section or document, not 'bogus'"),
        ("SELECT * FROM windowrag.dense_search(%s, %s::vector, 5)", [small, "[" + ",".join(["0"] * len(embedding)) + "]"],
         "windowrag: query_embedding is all zeros"),
    ]
    for statement, params, message in out_of_range:
        with pytest.raises(psycopg.errors.InvalidParameterValue) as error:
            conn.execute(statement, params)
        assert error.value.diag.message_primary.startswith(message), statement
    # the SQL default radius is the library's
    default = conn.execute("SELECT count(*) FROM windowrag.candidate_sentences(%s, 'keys', %s)", [small, embedding]).fetchone()
    explicit = conn.execute("SELECT count(*) FROM windowrag.candidate_sentences(%s, 'keys', %s, radius => %s)",
                            [small, embedding, PipelineOptions().radius]).fetchone()
    assert default == explicit


def test_sql_search_functions_leave_the_callers_settings_as_they_were(conn, small, embedder):
    """search_windows (through dense_search) set hnsw.ef_search and hnsw.iterative_scan, and
    bm25_rebuild work_mem, until the end of the caller's transaction before migration 0027."""
    embedding = embedder.embed_query("rotate keys")
    with conn.transaction():
        conn.execute("SET LOCAL hnsw.ef_search = 77")
        conn.execute("SET LOCAL work_mem = '5MB'")
        conn.execute("SELECT count(*) FROM windowrag.search_windows(%s, 'keys', %s, ef_search => 7, "
                     "document_ids => ARRAY[1, 2]::bigint[])", [small, embedding])
        conn.execute("SELECT windowrag.bm25_rebuild(windowrag.collection_id(%s))", [small])
        assert conn.execute("SELECT current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan'), "
                            "current_setting('work_mem')").fetchone() == ("77", "off", "5MB")
