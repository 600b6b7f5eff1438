"""The optional windowrag_native extension (sql/native): BM25 sums in C. bm25_search must return
the same rows with it as with its SQL phase 1 (the extension dropped inside a rolled-back
transaction), on whole lists, cut lists, posting rows not yet packed and stale postings. (With
the extension a cut list is read whole more often, which only makes the ranking exact; the cases
here take the same path both ways: test_bm25_blocks.py checks where each one cuts.)
The README's test command builds it (`windowrag native-install`) before the tests."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from windowrag_pg.db import connection as db
from windowrag_pg.db.native import (
    NativeBuildError, NativeFilesMissing, embedded_pg_config, install_native, native_state,
)
from windowrag_pg.doctor import repair_native, run_checks
from windowrag_pg.ingest import Ingestor
from windowrag_pg.store.bm25 import rebuild_bm25
from windowrag_pg.store.collections import get_collection
from windowrag_pg.store.writer import delete_document

from .conftest import scratch_database
from .test_bm25_blocks import bm25_results, port_documents

SUMS = "SELECT (s).sentence_ids, (s).sums FROM (SELECT windowrag_native.bm25_sums(ids, tfs, lengths, idf, %s, 1.2, 0.75, %s) AS s FROM ({rows}) r (ids, tfs, lengths, idf)) x"


def weight(tf: int, length: int, avg_length: float, k1: float = 1.2, b: float = 0.75) -> float:
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_length))


def test_the_migration_creates_the_extension(conn):
    installed, available = native_state(conn)
    assert available, "windowrag_native is not installed on the test server: run `windowrag native-install`"
    assert installed == "1.0"
    check = next(c for c in run_checks(conn) if c.name == "BM25 sums in C")
    assert check.ok and check.detail == "windowrag_native 1.0"


def test_bm25_sums_weighs_sums_and_keeps_the_best(conn):
    rows = ("VALUES ('{1,2,3}'::bigint[], '{1,2,1}'::smallint[], '{4,8,12}'::integer[], 2.0::float8),"
            " ('{3,4}'::bigint[], '{3,1}'::smallint[], '{12,4}'::integer[], 0.5::float8),"
            " (NULL, NULL, NULL, 1.0)")  # a term without unpacked postings
    ids, sums = conn.execute(SUMS.format(rows=rows), [8.0, 0]).fetchone()
    expected = {1: 2 * weight(1, 4, 8), 2: 2 * weight(2, 8, 8), 3: 2 * weight(1, 12, 8) + 0.5 * weight(3, 12, 8),
                4: 0.5 * weight(1, 4, 8)}
    ranked = sorted(expected, key=lambda i: (-expected[i], i))
    assert ids == ranked
    assert all(math.isclose(s, expected[i], rel_tol=1e-12) for i, s in zip(ids, sums))
    top2, _ = conn.execute(SUMS.format(rows=rows), [8.0, 2]).fetchone()
    assert top2 == ranked[:2]
    # equal sums rank by sentence id
    tie, _ = conn.execute(SUMS.format(rows="VALUES ('{9,5,7}'::bigint[], '{1,1,1}'::smallint[], '{3,3,3}'::integer[], 1.0::float8)"),
                          [3.0, 0]).fetchone()
    assert tie == [5, 7, 9]
    empty = conn.execute(SUMS.format(rows="SELECT NULL::bigint[], NULL::smallint[], NULL::integer[], 1.0::float8 WHERE false"),
                         [3.0, 5]).fetchone()
    assert empty == ([], [])


def test_bm25_sums_many_sentences_grow_the_table(conn):
    # 20,000 distinct sentences across blocks: the hash table grows several times; every sum kept
    rows = ("SELECT array_agg(g::bigint), array_agg((1 + g %% 3)::smallint), array_agg((5 + g %% 7)::integer), 1.0::float8 "
            "FROM generate_series(1, 20000) g GROUP BY g / 128")
    ids, sums = conn.execute(SUMS.format(rows=rows), [8.0, 0]).fetchone()
    assert len(ids) == 20000 and len(set(ids)) == 20000
    assert all(a >= b for a, b in zip(sums, sums[1:]))
    best = max(range(1, 20001), key=lambda g: (weight(1 + g % 3, 5 + g % 7, 8.0), -g))
    assert ids[0] == best


@pytest.mark.parametrize("rows, problem", [
    ("VALUES ('{1,2}'::bigint[], '{1}'::smallint[], '{4,4}'::integer[], 1.0::float8)",
     r"sentence_ids, tfs and lengths differ in length \(2, 1, 2\)"),
    ("VALUES ('{1,NULL}'::bigint[], '{1,1}'::smallint[], '{4,4}'::integer[], 1.0::float8)", "sentence_ids holds a NULL"),
    ("VALUES ('{1}'::bigint[], '{1}'::smallint[], '{4}'::integer[], NULL::float8)", "idf, avg_length, k1 and b must not be NULL"),
])
def test_bm25_sums_names_bad_blocks(conn, rows, problem):
    with pytest.raises(psycopg.Error, match=f"windowrag_native.bm25_sums: {problem}"):
        conn.execute(SUMS.format(rows=rows), [8.0, 0])


SQL_SCORE = """
SELECT s.id, sum(q.idf * windowrag.bm25_term_weight(cardinality(u.positions), s.bm25_length, %(avg)s, 1.2, 0.75))
FROM windowrag.sentences s CROSS JOIN LATERAL unnest(s.tsv) u
JOIN unnest(%(lexemes)s::text[], %(idfs)s::float8[]) AS q (lexeme, idf) ON q.lexeme = u.lexeme
WHERE s.collection_id = %(cid)s GROUP BY s.id"""
C_SCORE = """
SELECT s.id, windowrag_native.bm25_score(s.tsv, %(lexemes)s, %(idfs)s, s.bm25_length, %(avg)s, 1.2, 0.75)
FROM windowrag.sentences s WHERE s.collection_id = %(cid)s"""


def test_bm25_score_reads_the_tsvector_as_sql_does(conn, embedder, collection_name):
    assert not Ingestor(conn, collection=collection_name, embedder=embedder).ingest(port_documents(4)).errors
    # 'cargo' repeats in a sentence (tf up to 4), 'zebra' is in none, 'berth' in every one
    values = {"lexemes": ["cargo", "zebra", "berth", "crane"], "idfs": [2.5, 9.0, 0.25, 0.5],
              "avg": 11.5, "cid": get_collection(conn, collection_name).id}
    in_sql = dict(conn.execute(SQL_SCORE, values).fetchall())
    in_c = dict(conn.execute(C_SCORE, values).fetchall())
    assert len(in_c) == 48 and in_sql.keys() == in_c.keys()
    assert all(math.isclose(in_c[i], in_sql[i], rel_tol=1e-12) for i in in_c)
    assert len({round(v, 6) for v in in_c.values()}) > 3  # tf and lengths differ between sentences
    nothing = conn.execute(C_SCORE, {**values, "lexemes": ["zebra"], "idfs": [1.0]}).fetchall()
    assert {score for _, score in nothing} == {0.0}
    with pytest.raises(psycopg.Error, match=r"bm25_score: lexemes and idfs differ in length \(2, 1\)"):
        conn.execute(C_SCORE, {**values, "lexemes": ["cargo", "crane"], "idfs": [1.0]})


def sql_phase_results(conn, name: str, **options):
    """bm25_search's rows with its SQL phase 1 (the extension dropped, then restored by rollback)."""
    with conn.transaction(force_rollback=True):
        conn.execute("DROP EXTENSION windowrag_native")
        return bm25_results(conn, name, **options)


def test_same_rows_with_and_without_the_extension(conn, embedder, collection_name):
    # posting rows not yet packed
    assert not Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(15)).errors
    # (re-scoring a cut list's shortlist in C: test_bm25_score_reads_the_tsvector_as_sql_does, and
    # test_bm25_blocks.py's case where the extension cuts and re-scores)
    cases = [{}, {"n": 5, "per_term_limit": 10, "shortlist_size": 20}, {"n": 3, "per_term_limit": 1}]
    for options in cases:
        assert bm25_results(conn, collection_name, **options) == sql_phase_results(conn, collection_name, **options)
    # packed blocks (several for 'crane'), then a deleted document (stale postings: phase 2 drops them),
    # then new posting rows beside the blocks
    rebuild_bm25(conn, get_collection(conn, collection_name))
    delete_document(conn, get_collection(conn, collection_name), "port3")
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(3, prefix="more"))
    for options in cases:
        native = bm25_results(conn, collection_name, **options)
        assert native == sql_phase_results(conn, collection_name, **options)
        assert all(rows for rows in native)


def test_same_rows_on_real_text(conn, contractnli_collection):
    queries = ["confidential information disclosed to third parties", "return or destroy all copies",
               "the receiving party shall not reverse engineer", "governing law of the state of New York"]
    def run():
        return [conn.execute("SELECT sentence_id, score, rank FROM windowrag.bm25_search(%s, %s, 50)",
                             [contractnli_collection, q]).fetchall() for q in queries]
    native = run()
    with conn.transaction(force_rollback=True):
        conn.execute("DROP EXTENSION windowrag_native")
        assert run() == native
    assert all(len(rows) == 50 for rows in native)


def test_doctor_creates_it_in_a_database_without_it(db_url, embedder):
    with scratch_database(db_url, "native_doctor_test") as url:
        with db.connect(url, autocommit=True) as conn:
            Ingestor(conn, collection="p", embedder=embedder).ingest(port_documents(2))
            before = bm25_results(conn, "p")
            conn.execute("DROP EXTENSION windowrag_native")
            check = next(c for c in run_checks(conn) if c.name == "BM25 sums in C")
            assert check.ok and "not in this database" in check.detail and check.fix == "windowrag doctor --fix"
            # the CLI shows a passing check with something to do as a note, not "ok … fix:"; exit 0
            doctor = subprocess.run([sys.executable, "-m", "windowrag_pg.cli", "--database-url", url, "doctor"],
                                    capture_output=True, text=True, timeout=300)
            assert doctor.returncode == 0, doctor.stdout + doctor.stderr
            assert "note BM25 sums in C: windowrag_native is on the server" in doctor.stdout
            assert "to do: windowrag doctor --fix" in doctor.stdout and "1 note, 0 failed" in doctor.stdout
            assert bm25_results(conn, "p") == before  # the SQL phase 1
            assert repair_native(conn) and native_state(conn)[0] == "1.0"
            assert not repair_native(conn)  # nothing left to do
            assert bm25_results(conn, "p") == before


def test_doctor_fails_when_the_server_lost_the_files(conn):
    """The extension in the database, its files gone from the server (hidden here by moving the
    control file aside): BM25 would fail, so doctor fails and says how to mend it."""
    control = embedded_pg_config().parent.parent / "share" / "extension" / "windowrag_native.control"
    if os.environ.get("WINDOWRAG_TEST_DATABASE_URL") or not control.is_file():
        pytest.skip("the test server is not the embedded one")
    aside = control.with_name("windowrag_native.control.aside")
    control.rename(aside)
    try:
        check = next(c for c in run_checks(conn) if c.name == "BM25 sums in C")
    finally:
        aside.rename(control)
    assert not check.ok and "files are missing on the server" in check.detail
    assert check.fix.startswith("windowrag native-install")
    assert next(c for c in run_checks(conn) if c.name == "BM25 sums in C").ok


def test_a_search_names_the_cure_when_the_server_lost_the_library(db_url, conn, embedder, collection_name):
    """The extension in the database, its library gone from the server (moved aside here): a BM25
    search through the Python API says what to do, instead of the server's "could not access
    file" error; with the library back, the same search runs."""
    from windowrag_pg.retrieve.retriever import Retriever
    from windowrag_pg.sources import SourceDocument

    pkglibdir = subprocess.run([str(embedded_pg_config()), "--pkglibdir"], capture_output=True, text=True).stdout.strip()
    library = Path(pkglibdir) / "windowrag_native.so"
    if os.environ.get("WINDOWRAG_TEST_DATABASE_URL") or not library.is_file():
        pytest.skip("the test server is not the embedded one")
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest([SourceDocument(
        external_id="nda", format="text", text="Confidential information stays secret. The recipient returns it.")])
    aside = library.with_name("windowrag_native.so.aside")
    library.rename(aside)
    try:
        with db.connect(db_url) as fresh:  # a new server process: the library is not loaded in it yet
            with pytest.raises(NativeFilesMissing, match="windowrag native-install") as raised:
                Retriever(fresh, embedder=embedder, collection=collection_name).search("confidential", mode="bm25")
    finally:
        aside.rename(library)
    assert "windowrag_native" in str(raised.value) and isinstance(raised.value.__cause__, psycopg.errors.UndefinedFile)
    with db.connect(db_url) as fresh:
        found = Retriever(fresh, embedder=embedder, collection=collection_name).search("confidential", mode="bm25")
    assert [c.document_id for c in found.contexts] == ["nda"]


def test_install_names_a_missing_pg_config(tmp_path):
    with pytest.raises(NativeBuildError, match=f"pg_config not found at {tmp_path / 'pg_config'}"):
        install_native(tmp_path / "pg_config")
