"""alembic downgrade base / upgrade head on a populated database (in a database of its own).

A downgrade that deletes stored data runs only when confirmed and says what it deletes
(windowrag_pg/db/data_loss.py); without confirmation it changes nothing and fails.
"""
from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from windowrag_pg.db import connection as db
from windowrag_pg.db.data_loss import DataLossNotConfirmed, describe_loss, is_confirmed
from windowrag_pg.ingest import Ingestor
from windowrag_pg.sources import SourceDocument

from .conftest import scratch_database

ALEMBIC_INI = Path(__file__).resolve().parent.parent / "migrations" / "alembic.ini"


def _fresh_database(db_url: str, name: str) -> str:
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return psycopg.conninfo.make_conninfo(db_url, dbname=name)


def _populate(conn, embedder) -> None:
    Ingestor(conn, collection="m", embedder=embedder).ingest([
        SourceDocument(external_id="a", format="markdown", text="# A\n\nFirst sentence here. Second one there.")])
    Ingestor(conn, collection="n", embedder=embedder).ingest([
        SourceDocument(external_id="b", format="text", text="One more. And another."),
        SourceDocument(external_id="c", format="text", text="The last one.")])


def _ingest_text(conn, embedder, text: str) -> None:
    """TEXT as the one document of collection "many"."""
    Ingestor(conn, collection="many", embedder=embedder).ingest([
        SourceDocument(external_id="many", format="text", text=text)])


def _alembic(conn, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "WINDOWRAG_DATABASE_URL": db._connection_url(conn)}  # a URL, as users give it
    env.pop("WINDOWRAG_CONFIRM_DATA_LOSS", None)
    return subprocess.run([sys.executable, "-m", "alembic", "-c", str(ALEMBIC_INI), *args],
                          env=env, capture_output=True, text=True, timeout=300)


def test_downgrade_base_asks_for_confirmation_and_says_what_is_lost(db_url, embedder):
    url = _fresh_database(db_url, "migration_test")
    with db.connect(url, autocommit=True) as conn:
        _populate(conn, embedder)
        assert conn.execute("SELECT count(*) FROM windowrag.sentences").fetchone()[0] == 6

        # refused from Python: nothing changes
        with pytest.raises(DataLossNotConfirmed) as info:
            db.downgrade(conn, "base")
        message = str(info.value)
        assert "deletes 2 collections, 3 documents and 6 sentences" in message
        assert "m: 1 document, 3 sentences; n: 2 documents, 3 sentences" in message
        assert "confirm-data-loss=yes" in message and "Nothing was changed" in message
        assert db.current_revision(conn) == db.head_revision()
        assert conn.execute("SELECT count(*) FROM windowrag.sentences").fetchone()[0] == 6

        # refused from the alembic command line: non-zero exit, the same account, nothing changes
        refused = _alembic(conn, "downgrade", "base")
        assert refused.returncode != 0
        assert "FAILED" in refused.stdout + refused.stderr
        assert "m: 1 document, 3 sentences" in refused.stdout + refused.stderr
        assert db.current_revision(conn) == db.head_revision()
        assert conn.execute("SELECT count(*) FROM windowrag.sentences").fetchone()[0] == 6

        # confirmed on the command line: done, and it says what went
        done = _alembic(conn, "-x", "confirm-data-loss=yes", "downgrade", "base")
        assert done.returncode == 0, done.stderr
        assert "deletes 2 collections, 3 documents and 6 sentences" in done.stderr
        assert conn.execute("SELECT to_regclass('windowrag.sentences')").fetchone()[0] is None

        # an empty schema needs no confirmation; the Python confirmation works too
        db.upgrade(conn)
        assert db.current_revision(conn) == db.head_revision()
        assert conn.execute("SELECT count(*) FROM windowrag.sentences").fetchone()[0] == 0
        db.downgrade(conn, "base")
        assert db.current_revision(conn) is None
        db.upgrade(conn)
        _populate(conn, embedder)
        db.downgrade(conn, "base", confirm_data_loss=True)
        assert conn.execute("SELECT to_regclass('windowrag.documents')").fetchone()[0] is None
        db.upgrade(conn)
        assert db.current_revision(conn) == db.head_revision()
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier("migration_test")))


def test_confirmation_sources_and_loss_message():
    assert not is_confirmed(x_arguments={}, environ={}, attribute=None)
    assert not is_confirmed(x_arguments={"confirm-data-loss": "no"}, environ={"WINDOWRAG_CONFIRM_DATA_LOSS": ""},
                            attribute=False)
    assert is_confirmed(x_arguments={"confirm-data-loss": "yes"}, environ={}, attribute=None)
    assert is_confirmed(x_arguments={}, environ={"WINDOWRAG_CONFIRM_DATA_LOSS": "YES"}, attribute=None)
    assert is_confirmed(x_arguments={}, environ={}, attribute=True)
    rows = [(f"c{i}", 1, 1000) for i in range(25)]
    message = describe_loss("downgrade below 0001", rows)
    assert message.startswith("downgrade below 0001 deletes 25 collections, 25 documents and 25,000 sentences (")
    assert "c19: 1 document, 1,000 sentences; and 5 more)" in message and "c20:" not in message


def test_database_migrated_by_a_newer_version_is_refused_clearly(db_url, embedder):
    """A rolling deploy or a rolled-back library meets a schema newer than it knows: a clear
    error naming the revision and what to do (not Alembic's "Can't locate revision"), no change."""
    url = _fresh_database(db_url, "migration_newer_test")
    with db.connect(url, autocommit=True) as conn:
        _populate(conn, embedder)
        conn.execute("UPDATE windowrag.alembic_version SET version_num = '9001'")
    with pytest.raises(db.DatabaseError) as info:
        db.connect(url, autocommit=True)
    message = str(info.value)
    assert "revision 9001" in message and f"its newest is {db.head_revision()}" in message
    assert "newer windowrag-pg" in message and "nothing was changed" in message
    assert "migration_newer_test" in message
    with psycopg.connect(url, autocommit=True) as conn:  # a replica's check says the same
        with pytest.raises(db.DatabaseError, match="revision 9001, which this windowrag-pg does not know"):
            db.check_revision(conn)
        assert conn.execute("SELECT version_num FROM windowrag.alembic_version").fetchone()[0] == "9001"
        assert conn.execute("SELECT count(*) FROM windowrag.sentences").fetchone()[0] == 6
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier("migration_newer_test")))


def _search_windows_settings(conn) -> list[str]:
    return conn.execute("SELECT coalesce(proconfig, '{}') FROM pg_proc WHERE oid = "
                        "'windowrag.search_windows(text, text, vector, integer, integer, text, integer, text, "
                        "integer, float8, float8, bigint[], integer, float8, float8, integer)'::regprocedure"
                        ).fetchone()[0]


def test_0015_generic_plans_for_search_windows_down_and_up(db_url, embedder):
    """0015 gives search_windows generic plans; its downgrade gives back 0014's function (same
    results either way) and the upgrade the live one."""
    url = _fresh_database(db_url, "migration_0015_test")
    with db.connect(url, autocommit=True) as conn:
        _populate(conn, embedder)
        vector = embedder.embed_query("second sentence")
        query = ("SELECT document_id, first_ordinal, last_ordinal, text FROM windowrag.search_windows("
                 "'m', 'second sentence', %s::vector)")
        at_head = conn.execute(query, [str(vector.tolist())]).fetchall()
        assert at_head and _search_windows_settings(conn) == ["plan_cache_mode=force_generic_plan"]
        db.downgrade(conn, "0014")
        assert _search_windows_settings(conn) == []
        assert conn.execute(query, [str(vector.tolist())]).fetchall() == at_head
        db.upgrade(conn)
        assert _search_windows_settings(conn) == ["plan_cache_mode=force_generic_plan"]
        assert conn.execute(query, [str(vector.tolist())]).fetchall() == at_head
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier("migration_0015_test")))


def test_0018_search_windows_takes_the_library_default_candidates_down_and_up(db_url, embedder):
    """0018: search_windows called without candidates fuses the library's 20 per list (50 before);
    its downgrade gives back 50, the upgrade 20 again, the body unchanged."""
    from windowrag_pg.pipeline import PipelineOptions
    from windowrag_pg.retrieve.retriever import SearchOptions

    arguments = ("SELECT pg_get_function_arguments(p.oid) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                 "WHERE n.nspname = 'windowrag' AND p.proname = 'search_windows'")
    body = "SELECT prosrc FROM pg_proc WHERE proname = 'search_windows'"
    # 60 sentences that all match both lists; window 0 and k 100: every fused hit is walked, and
    # the hits of the segments count the fused list (adjacent windows merge, their hits stay)
    hits = ("SELECT sum(jsonb_array_length(hits)) FROM windowrag.search_windows("
            "'many', 'alpha fact', %s::vector, k => 100, window_size => 0)")
    hits_with = hits[:-1] + ", candidates => %s)"
    with scratch_database(db_url, "migration_0018_test") as url, db.connect(url, autocommit=True) as conn:
        text = " ".join(f"Alpha fact number {i} is stated here." for i in range(60))
        _ingest_text(conn, embedder, text)
        vector = str(embedder.embed_query("alpha fact").tolist())

        def fused(candidates: int | None = None) -> int:
            if candidates is None:
                return conn.execute(hits, [vector]).fetchone()[0]
            return conn.execute(hits_with, [vector, candidates]).fetchone()[0]

        assert SearchOptions().candidates == PipelineOptions().candidates == 20
        assert "candidates integer DEFAULT 20," in conn.execute(arguments).fetchone()[0]
        at_head, head_body = fused(), conn.execute(body).fetchone()[0]
        assert at_head == fused(20) <= 40 < 50 <= fused(50)
        db.downgrade(conn, "0018")  # the body 0018 left (0027 changed it since)
        body_0018 = conn.execute(body).fetchone()[0]
        db.downgrade(conn, "0017")
        assert "candidates integer DEFAULT 50," in conn.execute(arguments).fetchone()[0]
        assert fused() == fused(50) and conn.execute(body).fetchone()[0] == body_0018
        db.upgrade(conn)
        assert "candidates integer DEFAULT 20," in conn.execute(arguments).fetchone()[0]
        assert fused() == at_head and conn.execute(body).fetchone()[0] == head_body


# Cut-list BM25 queries over collection "many" as _packed_alpha_collection fills it (a list of 300
# postings cut at 20)
ALPHA_QUERIES = [("SELECT sentence_id, score FROM windowrag.bm25_search('many', %s, 5, per_term_limit => 20)", [q])
                 for q in ("alpha fact", "alpha here today", "fact stated")]


def _packed_alpha_collection(conn, embedder) -> int:
    """Collection "many": 300 sentences sharing "alpha", packed in full; returns its id."""
    _ingest_text(conn, embedder, " ".join(f"Alpha fact {i} {'alpha ' * (i % 2)}is stated {'here ' * (i % 5)}today."
                                          for i in range(300)))
    cid = conn.execute("SELECT id FROM windowrag.collections WHERE name = 'many'").fetchone()[0]
    conn.execute("SELECT windowrag.bm25_rebuild(%s)", [cid])
    return cid


def _alpha_results(conn) -> list:
    return [conn.execute(query, args).fetchall() for query, args in ALPHA_QUERIES]


def test_0021_bm25_recent_tier_down_and_up(db_url, embedder):
    """0021 packs what was written since the last full pack into a recent tier (blocks below 0);
    its downgrade folds the tier into a full pack and gives back 0020's functions; the same BM25
    results through both, cut lists included."""
    tiers = "SELECT count(*) FILTER (WHERE block < 0), count(*) FILTER (WHERE block >= 0) FROM windowrag.bm25_blocks"
    recent_column = ("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'windowrag'"
                     " AND table_name = 'bm25_terms' AND column_name = 'recent_df'")
    with scratch_database(db_url, "migration_0021_test") as url, db.connect(url, autocommit=True) as conn:
        cid = _packed_alpha_collection(conn, embedder)
        Ingestor(conn, collection="many", embedder=embedder, bulk=False).ingest([
            SourceDocument(external_id="more", format="text",
                           text=" ".join(f"Alpha alpha fact {i} here. Another fact stated." for i in range(40)))])
        conn.execute("SELECT windowrag.bm25_pack_recent(%s)", [cid])
        recent, first = conn.execute(tiers).fetchone()
        assert recent > 0 and first > 0
        results = _alpha_results(conn)
        assert all(len(r) == 5 for r in results)
        db.downgrade(conn, "0020")
        assert conn.execute(tiers).fetchone()[0] == 0 and conn.execute(recent_column).fetchone()[0] == 0
        assert conn.execute("SELECT to_regprocedure('windowrag.bm25_pack_recent(integer)')").fetchone()[0] is None
        assert _alpha_results(conn) == results
        db.upgrade(conn)
        assert conn.execute(recent_column).fetchone()[0] == 1
        assert _alpha_results(conn) == results
        conn.execute("SELECT windowrag.bm25_pack_recent(%s)", [cid])  # nothing new: an empty tier
        assert conn.execute(tiers).fetchone()[0] == 0
        assert _alpha_results(conn) == results


def test_0020_bm25_packed_df_down_and_up(db_url, embedder):
    """0020 adds bm25_terms.packed_df, filled from the blocks of live sentences (a deleted
    sentence's packed postings do not count); the downgrade drops it and gives back 0019's
    functions; the same BM25 results through both, cut lists included."""
    packed_df = "SELECT lexeme, df, packed_df FROM windowrag.bm25_terms ORDER BY 1"
    column = ("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'windowrag'"
              " AND table_name = 'bm25_terms' AND column_name = 'packed_df'")
    with scratch_database(db_url, "migration_0020_test") as url, db.connect(url, autocommit=True) as conn:
        cid = _packed_alpha_collection(conn, embedder)
        conn.execute("DELETE FROM windowrag.sentences WHERE collection_id = %s AND id %% 7 = 0", [cid])
        Ingestor(conn, collection="many", embedder=embedder, bulk=False).ingest([
            SourceDocument(external_id="more", format="text", text="Alpha alpha fact here. Another fact stated.")])
        at_head = conn.execute(packed_df).fetchall()
        alpha = next(r for r in at_head if r[0] == "alpha")
        assert alpha[1] - alpha[2] == 1 and 0 < alpha[2] < 300  # one row; deleted sentences left out
        results = _alpha_results(conn)
        assert all(len(r) == 5 for r in results)
        db.downgrade(conn, "0019")
        assert conn.execute(column).fetchone()[0] == 0
        assert _alpha_results(conn) == results
        db.upgrade(conn)
        assert conn.execute(packed_df).fetchall() == at_head
        assert _alpha_results(conn) == results


def test_0019_bm25_rebuild_through_a_temporary_table_down_and_up(db_url, embedder):
    """0019's bm25_rebuild computes the blocks in a temporary table (a parallel sort); its downgrade
    gives back 0018's single INSERT ... SELECT; both pack the same blocks, lists of several blocks
    included, and the new one runs twice in one transaction."""
    blocks = "SELECT lexeme, block, max_impact, sentence_ids, tfs, lengths FROM windowrag.bm25_blocks ORDER BY 1, 2"
    # bm25_rebuild's source, with bm25_write_blocks' since 0021 moved its block query there
    definition = ("SELECT string_agg(prosrc, ' ') FROM pg_proc WHERE pronamespace = 'windowrag'::regnamespace"
                  " AND proname IN ('bm25_rebuild', 'bm25_write_blocks')")
    # 300 sentences sharing "alpha" (3 blocks of 128), with tf 1 or 2 and lengths that vary, so
    # that impacts differ and tie
    text = " ".join(f"Alpha fact {i} {'alpha ' * (i % 2)}is stated {'here ' * (i % 5)}today." for i in range(300))
    with scratch_database(db_url, "migration_0019_test") as url, db.connect(url, autocommit=True) as conn:
        _ingest_text(conn, embedder, text)
        cid = conn.execute("SELECT id FROM windowrag.collections WHERE name = 'many'").fetchone()[0]
        with conn.transaction():
            conn.execute("SELECT windowrag.bm25_rebuild(%s)", [cid])
            conn.execute("SELECT windowrag.bm25_rebuild(%s)", [cid])
        at_head = conn.execute(blocks).fetchall()
        assert [b for lexeme, b, *_ in at_head if lexeme == "alpha"] == [0, 1, 2]
        assert "CREATE TEMP TABLE" in conn.execute(definition).fetchone()[0]
        db.downgrade(conn, "0018")
        assert "CREATE TEMP TABLE" not in conn.execute(definition).fetchone()[0]
        conn.execute("SELECT windowrag.bm25_rebuild(%s)", [cid])
        assert conn.execute(blocks).fetchall() == at_head
        db.upgrade(conn)
        assert "CREATE TEMP TABLE" in conn.execute(definition).fetchone()[0]
        conn.execute("SELECT windowrag.bm25_rebuild(%s)", [cid])
        assert conn.execute(blocks).fetchall() == at_head


def test_0016_native_bm25_sums_down_and_up(db_url, embedder):
    """0016 creates windowrag_native (the server has it: the test command builds it) and bm25_search
    uses it; its downgrade gives back 0015's bm25_search and drops the extension; same rows."""
    from windowrag_pg.db.native import native_state

    with scratch_database(db_url, "migration_0016_test") as url, db.connect(url, autocommit=True) as conn:
        _populate(conn, embedder)
        query = "SELECT sentence_id, score, rank FROM windowrag.bm25_search('n', 'one more another last')"
        at_head = conn.execute(query).fetchall()
        assert len(at_head) == 3 and native_state(conn)[0] == "1.0"
        db.downgrade(conn, "0015")
        assert native_state(conn)[0] is None
        assert conn.execute(query).fetchall() == at_head
        db.upgrade(conn)
        assert native_state(conn)[0] == "1.0"
        assert conn.execute(query).fetchall() == at_head


def test_0017_bm25_rebuild_bytewise_down_and_up(db_url, embedder):
    """0017's bm25_rebuild groups the lexemes bytewise; its downgrade gives back 0016's; both pack
    the same blocks."""
    blocks = "SELECT lexeme, block, max_impact, sentence_ids, tfs, lengths FROM windowrag.bm25_blocks ORDER BY 1, 2"
    # bm25_rebuild's source, with bm25_write_blocks' since 0021 moved its block query there
    definition = ("SELECT string_agg(prosrc, ' ') FROM pg_proc WHERE pronamespace = 'windowrag'::regnamespace"
                  " AND proname IN ('bm25_rebuild', 'bm25_write_blocks')")
    with scratch_database(db_url, "migration_0017_test") as url, db.connect(url, autocommit=True) as conn:
        _populate(conn, embedder)
        cid = conn.execute("SELECT id FROM windowrag.collections WHERE name = 'n'").fetchone()[0]
        conn.execute("SELECT windowrag.bm25_rebuild(%s)", [cid])
        at_head = conn.execute(blocks).fetchall()
        assert at_head and 'COLLATE "C"' in conn.execute(definition).fetchone()[0]
        db.downgrade(conn, "0016")
        assert 'COLLATE "C"' not in conn.execute(definition).fetchone()[0]
        conn.execute("SELECT windowrag.bm25_rebuild(%s)", [cid])
        assert conn.execute(blocks).fetchall() == at_head
        db.upgrade(conn)
        assert 'COLLATE "C"' in conn.execute(definition).fetchone()[0]
        conn.execute("SELECT windowrag.bm25_rebuild(%s)", [cid])
        assert conn.execute(blocks).fetchall() == at_head


def test_0026_a_null_query_embedding_is_named_down_and_up(db_url, embedder):
    """A psql user's hybrid query with NULL for the embedding: at head the error names the NULL,
    the command that prints an embedding and BM25 alone; 0026's downgrade gives back 0024's
    dense_search (its message, the same results) and the upgrade the live one."""
    with scratch_database(db_url, "migration_0026_test") as url, db.connect(url, autocommit=True) as conn:
        _populate(conn, embedder)
        with pytest.raises(psycopg.errors.NullValueNotAllowed) as raised:
            conn.execute("SELECT * FROM windowrag.search_windows('m', 'second sentence', NULL)")
        message = str(raised.value)
        assert "query_embedding is NULL" in message and "windowrag embed-query --collection m" in message
        assert "mode => 'bm25'" in message
        # BM25 alone needs no embedding
        assert conn.execute("SELECT count(*) FROM windowrag.search_windows('m', 'second sentence', NULL, "
                            "mode => 'bm25')").fetchone()[0] == 1
        vector = str(embedder.embed_query("second sentence").tolist())
        query = "SELECT sentence_id, rank FROM windowrag.dense_search('m', %s::vector, 2)"
        at_head = conn.execute(query, [vector]).fetchall()
        db.downgrade(conn, "0025")
        with pytest.raises(psycopg.errors.DataException, match="query embedding has no dimensions"):
            conn.execute("SELECT * FROM windowrag.search_windows('m', 'second sentence', NULL)")
        assert conn.execute(query, [vector]).fetchall() == at_head
        db.upgrade(conn)
        with pytest.raises(psycopg.errors.NullValueNotAllowed, match="query_embedding is NULL"):
            conn.execute("SELECT * FROM windowrag.search_windows('m', 'second sentence', NULL)")
        assert conn.execute(query, [vector]).fetchall() == at_head
        with pytest.raises(psycopg.errors.DataException, match="query embedding has 3 dimensions, collection 'm' has 384"):
            conn.execute("SELECT * FROM windowrag.dense_search('m', '[1,2,3]'::vector)")


def test_0027_arguments_checked_and_max_sentences_cuts_down_and_up(db_url, embedder):
    """0027: a NULL k is an error naming it (0026 returned every window), and max_sentences below
    one window's size cuts that window around its hit (0026 skipped it and returned nothing); the
    downgrade gives back 0026's functions, the upgrade the live ones, the same results otherwise."""
    with scratch_database(db_url, "migration_0027_test") as url, db.connect(url, autocommit=True) as conn:
        text = " ".join(f"Sentence {i} says fact {i}." for i in range(12)) + " The key fact is alpha beta gamma."
        _ingest_text(conn, embedder, text)
        vector = str(embedder.embed_query("alpha beta gamma").tolist())
        windows = ("SELECT first_ordinal, last_ordinal FROM windowrag.search_windows('many', 'alpha beta gamma', "
                   "%s::vector, k => 1, window_size => 3, mode => 'bm25'{})")
        at_head = conn.execute(windows.format(""), [vector]).fetchall()
        assert at_head == [(9, 12)]  # the one BM25 hit is the last sentence: three before it
        assert conn.execute(windows.format(", max_sentences => 2"), [vector]).fetchall() == [(11, 12)]
        with pytest.raises(psycopg.errors.NullValueNotAllowed, match="search_windows: k must not be NULL"):
            conn.execute(windows.format("").replace("k => 1", "k => NULL"), [vector])
        db.downgrade(conn, "0026")
        assert conn.execute(windows.format(", max_sentences => 2"), [vector]).fetchall() == []
        every = windows.format("").replace("k => 1", "k => NULL").replace("window_size => 3, mode => 'bm25'", "window_size => 0")
        assert conn.execute(every, [vector]).fetchall() == [(0, 12)]  # no error: every hit walked, merged
        assert conn.execute(windows.format(""), [vector]).fetchall() == at_head
        db.upgrade(conn)
        assert conn.execute(windows.format(", max_sentences => 2"), [vector]).fetchall() == [(11, 12)]
        with pytest.raises(psycopg.errors.NullValueNotAllowed):
            conn.execute(windows.format("").replace("k => 1", "k => NULL"), [vector])
        assert conn.execute(windows.format(""), [vector]).fetchall() == at_head


@contextmanager
def candidates_of_markdown(db_url, embedder, name: str, text: str, query_text: str):
    """A scratch database NAME holding TEXT (one Markdown document of collection 'c'): yields the
    connection, a function giving candidate_sentences' rows for QUERY_TEXT (by ordinal) and one
    giving the function's comment."""
    with scratch_database(db_url, name) as url, db.connect(url, autocommit=True) as conn:
        Ingestor(conn, collection="c", embedder=embedder).ingest([
            SourceDocument(external_id="doc", format="markdown", text=text)])
        vector = str(embedder.embed_query(query_text).tolist())

        def rows():
            return conn.execute("SELECT * FROM windowrag.candidate_sentences('c', %s, %s::vector) ORDER BY ordinal",
                                [query_text, vector]).fetchall()

        def comment():
            return conn.execute("SELECT obj_description('windowrag.candidate_sentences'::regproc, 'pg_proc')"
                                ).fetchone()[0]

        yield conn, rows, comment


def test_0028_candidate_sentences_returns_the_gaps_down_and_up(db_url, embedder):
    """0028: candidate_sentences gives each sentence's gap (the Markdown between it and the next
    sentence of its section, NULL for whitespace or at the section's end); the downgrade gives back
    0027's function (no gap column) with its comment, the upgrade the live one; the other columns
    are the same rows throughout."""
    text = ("# Rates\n\nRates are set every year.\n\n- Paris is 210 EUR a night.\n- Lyon is 140 EUR a night.\n\n"
            "Book through the portal.\n\n## Travel\n\nTrains are booked by the travel team.\n")
    with candidates_of_markdown(db_url, embedder, "migration_0028_test", text, "hotel rate in Paris") as (
            conn, rows, comment):
        at_head = rows()
        gaps = {row[5]: row[20] for row in at_head}  # ordinal → gap
        assert gaps[1] == "\n\n- " and gaps[2] == "\n- "  # list markers between sentences of a section
        assert gaps[3] is None  # "\n\n": whitespace only
        assert gaps[4] is None  # the end of its section: the next heading is not a gap
        db.downgrade(conn, "0027")
        assert [row[:20] for row in at_head] == rows()
        assert "matched query terms and ranks." in comment()
        db.upgrade(conn)
        assert rows() == at_head
        assert "(gap)" in comment()


def test_0029_candidate_sentences_returns_the_kinds_down_and_up(db_url, embedder):
    """0029: candidate_sentences gives each sentence's kind (a heading is one); the downgrade
    gives back 0028's function (no kind column) with its comment, the upgrade the live one; the
    other columns are the same rows throughout."""
    text = "# Rates\n\nRates are set every year.\n\n- Paris is 210 EUR a night.\n- Lyon is 140 EUR a night.\n"
    with candidates_of_markdown(db_url, embedder, "migration_0029_test", text, "hotel rate in Paris") as (
            conn, rows, comment):
        at_head = rows()
        assert [row[21] for row in at_head] == ["heading", "sentence", "list_item", "list_item"]
        db.downgrade(conn, "0028")
        assert [row[:21] for row in at_head] == rows()
        assert "its kind" not in comment()
        db.upgrade(conn)
        assert rows() == at_head
        assert "its kind" in comment()


def test_0030_candidate_sentences_returns_the_leads_down_and_up(db_url, embedder):
    """0030: candidate_sentences gives a list item its list's lead-in (a nested item its parent
    item) and a table row below the header its table's header row (ordinal, offsets, tokens); the
    downgrade gives back 0029's function (no lead columns) with its comment, the upgrade the live
    one; the other columns are the same rows throughout."""
    text = ("# Rates\n\nRates are set every year. Hotels in these cities:\n\n- Paris is 210 EUR a night.\n"
            "- Lyon is 140 EUR a night. Not covered there:\n  - Minibar.\n  - Parking.\n- Nice is 180 EUR.\n\n"
            "| City | Rate |\n|---|---|\n| Paris | 210 EUR |\n| Lyon | 140 EUR |\n"
            "\n| Country | Tax |\n| :-- | --: |\n| France | 20% |\n")  # a second table right after the first
    with candidates_of_markdown(db_url, embedder, "migration_0030_test", text, "hotel rate in Paris") as (
            conn, rows, comment):
        at_head = rows()
        units = {text[row[6]:row[7]]: row for row in at_head}
        leads = {unit: (row[21], text[row[23]:row[24]] if row[23] is not None else None)
                 for unit, row in units.items()}  # unit → (kind, its lead's text)
        lead_in, parent = "Hotels in these cities:", "Lyon is 140 EUR a night. Not covered there:"
        assert leads[lead_in] == ("sentence", None)  # the lead-in itself has none
        assert leads["Paris is 210 EUR a night."] == leads[parent] == ("list_item", lead_in)
        assert leads["Minibar."] == leads["Parking."] == ("list_item", parent)  # nested: the parent item
        assert leads["Nice is 180 EUR."] == ("list_item", lead_in)  # back at the top level
        assert leads["| City | Rate |"] == ("table_row", None)  # the header row has none
        assert leads["| Paris | 210 EUR |"] == leads["| Lyon | 140 EUR |"] == ("table_row", "| City | Rate |")
        assert leads["| Country | Tax |"] == ("table_row", None)
        assert leads["| France | 20% |"] == ("table_row", "| Country | Tax |")
        header = units["| City | Rate |"]
        assert units["| Paris | 210 EUR |"][22:26] == (header[5], header[6], header[7], header[8])
        db.downgrade(conn, "0029")
        assert [row[:22] for row in at_head] == rows()
        assert "lead" not in comment()
        db.upgrade(conn)
        assert rows() == at_head
        assert "lead-in" in comment()


def test_0031_a_null_query_text_is_refused_and_a_window_over_sections_is_cited_by_what_they_share(db_url, embedder):
    """0031: a NULL query_text (BM25, hybrid and windows) and a NULL sentence_id are refused by
    name (0030 returned no row or the dense hits alone); a window that runs over sections with
    clamp 'document' is cited by the headings they share (0030: its hit's section, which did not
    hold its text). The downgrade gives back 0030's functions, the upgrade the live ones."""
    text = ("# Handbook\n\n## Dental\n\nDental cover is included.\n\n## Learning budget\n\n"
            "Every teammate has a learning budget of 1,000 USD a year.\n\n## Time off\n\nTime off is unlimited.\n")
    with candidates_of_markdown(db_url, embedder, "migration_0031_test", text, "learning budget") as (conn, _, _c):
        vector = str(embedder.embed_query("learning budget").tolist())
        windows = ("SELECT section_path, start_char, end_char FROM windowrag.search_windows('c', 'learning budget', "
                   "%s::vector, k => 1, window_size => 2, clamp => 'document')")
        budget_id = conn.execute("SELECT s.id FROM windowrag.sentences s WHERE s.text LIKE 'Every teammate%%'").fetchone()[0]
        window = "SELECT section_path, start_char, end_char FROM windowrag.sentence_window(%s, 2, 'document')"
        nulls = ["SELECT * FROM windowrag.bm25_search('c', NULL, 10)",
                 "SELECT * FROM windowrag.search_windows('c', NULL, %s::vector)",
                 "SELECT * FROM windowrag.hybrid_search('c', NULL, %s::vector)",
                 "SELECT * FROM windowrag.candidate_sentences('c', NULL, %s::vector)"]

        def refused() -> list[bool]:
            found = []
            for query in nulls:
                try:
                    conn.execute(query, [vector] if "%s" in query else [])
                    found.append(False)
                except psycopg.errors.NullValueNotAllowed as error:
                    found.append("query_text must not be NULL" in str(error))
            return found

        ((path, start, end),) = conn.execute(windows, [vector]).fetchall()
        assert path == ["Handbook"] and "Dental" in text[start:end] and "Time off" in text[start:end]
        ((window_path, window_start, window_end),) = conn.execute(window, [budget_id]).fetchall()
        assert window_path == ["Handbook"] and "Dental" in text[window_start:window_end]
        assert conn.execute("SELECT section_path FROM windowrag.sentence_window(%s, 2)", [budget_id]).fetchone()[0] \
            == ["Handbook", "Learning budget"]  # clamped at its section: its own
        assert refused() == [True] * 4
        with pytest.raises(psycopg.errors.NullValueNotAllowed, match="sentence_window: sentence_id must not be NULL"):
            conn.execute("SELECT * FROM windowrag.sentence_window(NULL, 3)")
        db.downgrade(conn, "0030")
        assert conn.execute(windows, [vector]).fetchall() == [(["Handbook", "Learning budget"], start, end)]
        assert refused() == [False] * 4
        assert conn.execute("SELECT count(*) FROM windowrag.sentence_window(NULL, 3)").fetchone()[0] == 0
        assert conn.execute("SELECT to_regprocedure('windowrag.shared_heading_path(bigint, integer, integer)')"
                            ).fetchone()[0] is None
        db.upgrade(conn)
        assert conn.execute(windows, [vector]).fetchall() == [(["Handbook"], start, end)]
        assert refused() == [True] * 4


def test_0031_bm25_reads_queries_and_sentences_in_their_composed_form_down_and_up(db_url, embedder):
    """0031: "Jérôme" typed as e + a combining accent (NFD, text copied on macOS) and composed
    (NFC) are one word to BM25: the sentences' tsvectors and the query are read in NFC (the
    stored text keeps its form). At 0030 the NFD query found nothing; the filtered path too."""
    import unicodedata

    text = unicodedata.normalize("NFD", "Le pâtissier Jérôme prépare les éclairs chaque matin.")
    with candidates_of_markdown(db_url, embedder, "migration_0031_nfc_test", text, "éclairs") as (conn, _, _c):
        stored, document = conn.execute("SELECT s.text, s.document_id FROM windowrag.sentences s").fetchone()
        assert stored == text  # the text as given: offsets into it hold
        query = unicodedata.normalize("NFD", "Jérôme éclairs")
        bm25 = "SELECT count(*) FROM windowrag.bm25_search('c', %s, 10{})"

        def found() -> tuple[int, int]:
            return (conn.execute(bm25.format(""), [query]).fetchone()[0],
                    conn.execute(bm25.format(", document_ids => %s"), [query, [document]]).fetchone()[0])

        composed = unicodedata.normalize("NFC", query)
        assert found() == (1, 1) and conn.execute(bm25.format(""), [composed]).fetchone()[0] == 1
        db.downgrade(conn, "0030")
        assert found() == (0, 0)
        # a sentence stored before 0031: its tsvector of the text as given (NFD)
        conn.execute("ALTER TABLE windowrag.sentences DISABLE TRIGGER sentences_no_update")
        conn.execute("UPDATE windowrag.sentences SET tsv = to_tsvector('english', text)")
        conn.execute("ALTER TABLE windowrag.sentences ENABLE TRIGGER sentences_no_update")
        conn.execute("SELECT windowrag.bm25_rebuild(id) FROM windowrag.collections")
        assert found() == (1, 1) and conn.execute(bm25.format(""), [composed]).fetchone()[0] == 0
        db.upgrade(conn)  # recomposed: either form finds it
        assert found() == (1, 1) and conn.execute(bm25.format(""), [composed]).fetchone()[0] == 1
        assert conn.execute("SELECT bool_and(tsv = to_tsvector('english', normalize(text, NFC)))"
                            " FROM windowrag.sentences").fetchone()[0]
        assert conn.execute("SELECT tgenabled FROM pg_trigger WHERE tgname = 'sentences_no_update'").fetchone()[0] == "O"


def test_0032_dense_mode_takes_a_null_query_text_and_window_size_is_named_down_and_up(db_url, embedder):
    """0032: search_windows and hybrid_search with mode => 'dense' take a NULL query_text (dense
    mode reads no word; 0031 refused it as if BM25 would read it), the modes that read it still
    refuse it by name, candidate_sentences too (its sentence values read the words); the window
    limit's message names the SQL argument window_size (0031: window, the Python option)."""
    with scratch_database(db_url, "migration_0032_test") as url, db.connect(url, autocommit=True) as conn:
        _populate(conn, embedder)
        vector = str(embedder.embed_query("second sentence").tolist())
        dense = "SELECT {} FROM windowrag.{}('m', {}, %s::vector, mode => 'dense')"
        by_text = conn.execute(dense.format("segment_rank, start_char", "search_windows", "'second sentence'"),
                               [vector]).fetchall()
        fused = conn.execute(dense.format("sentence_id, rank", "hybrid_search", "'second sentence'"), [vector]).fetchall()
        assert by_text and fused

        def null_text_answers() -> tuple[bool, bool]:
            answers = []
            for columns, function, expected in (("segment_rank, start_char", "search_windows", by_text),
                                                ("sentence_id, rank", "hybrid_search", fused)):
                try:
                    answers.append(conn.execute(dense.format(columns, function, "NULL"), [vector]).fetchall() == expected)
                except psycopg.errors.NullValueNotAllowed:
                    answers.append(False)
            return tuple(answers)

        def window_message() -> str:
            with pytest.raises(psycopg.errors.InvalidParameterValue) as raised:
                conn.execute("SELECT * FROM windowrag.sentence_window(1, 101)")
            return raised.value.diag.message_primary

        assert null_text_answers() == (True, True)
        for mode in ("hybrid", "bm25"):
            with pytest.raises(psycopg.errors.NullValueNotAllowed, match="query_text must not be NULL"):
                conn.execute(f"SELECT * FROM windowrag.search_windows('m', NULL, %s::vector, mode => '{mode}')", [vector])
        with pytest.raises(psycopg.errors.NullValueNotAllowed, match="query_text must not be NULL"):
            conn.execute("SELECT * FROM windowrag.candidate_sentences('m', NULL, %s::vector, mode => 'dense')", [vector])
        assert window_message().startswith("windowrag: window_size must be an integer from 0 to 100, not 101")
        db.downgrade(conn, "0031")
        assert null_text_answers() == (False, False)
        assert window_message().startswith("windowrag: window must be an integer from 0 to 100, not 101")
        db.upgrade(conn)
        assert null_text_answers() == (True, True)
        assert window_message().startswith("windowrag: window_size must be")


def test_a_lead_in_is_looked_for_among_the_200_units_above_an_item(db_url, embedder):
    """The block a list item is in is found by a backward scan, bounded so that a page of
    thousands of items costs a query no more than 200 units each: an item further down has no
    lead-in; one within reach has it."""
    items = [f"- Part {i} is a plain washer.\n" for i in range(1, 211)]
    items[2], items[204] = "- Part 3 is the blue sprocket.\n", "- Part 205 is the red flange.\n"
    text = "# Parts\n\nThe parts we stock:\n\n" + "".join(items)
    with candidates_of_markdown(db_url, embedder, "lead_scan_test", text, "blue sprocket") as (conn, rows, _):
        leads = {text[row[6]:row[7]]: row[23] for row in rows()}  # unit → its lead's start
        assert leads["Part 3 is the blue sprocket."] == text.index("The parts we stock:")
        vector = str(embedder.embed_query("red flange").tolist())
        far = conn.execute("SELECT start_char, lead_ordinal FROM windowrag.candidate_sentences('c', 'red flange',"
                           " %s::vector)", [vector]).fetchall()
        assert (text.index("Part 205"), None) in far


def test_a_view_of_the_users_over_a_changed_function_holds_the_migration_back_and_says_so(db_url, embedder):
    """0029 drops and creates again candidate_sentences (a new result column): a view of the user's
    over it makes Postgres refuse. The upgrade names the view and what to do, and changes nothing;
    with the view dropped it goes through."""
    with scratch_database(db_url, "migration_view_test") as url, db.connect(url, autocommit=True) as conn:
        Ingestor(conn, collection="kinds", embedder=embedder).ingest([
            SourceDocument(external_id="rates", format="markdown", text="# Rates\n\nRates are set every year.\n")])
        db.downgrade(conn, "0028")
        vector = str(embedder.embed_query("rates").tolist())
        conn.execute(sql.SQL("CREATE VIEW public.my_candidates AS SELECT ordinal, gap FROM "
                             "windowrag.candidate_sentences('kinds', 'rates', {}::vector)").format(sql.Literal(vector)))
        with pytest.raises(db.DatabaseError) as raised:
            db.upgrade(conn)
        message = str(raised.value)
        assert "at revision 0028" in message and "my_candidates" in message and "nothing was changed" in message
        assert db.current_revision(conn) == "0028"
        assert conn.execute("SELECT count(*) FROM public.my_candidates").fetchone()[0] == 2
        conn.execute("DROP VIEW public.my_candidates")
        db.upgrade(conn)
        assert db.current_revision(conn) == db.head_revision()


def test_0033_search_windows_names_its_collection_first_down_and_up(db_url, embedder):
    """0033: search_windows names its collection before its hits are joined with the visible
    sentences (a tenant service that set no tenant got no row for any name: tests/test_tenancy.py);
    the downgrade restores 0032's definition, the upgrade this one; a missing collection is named
    either way where sentences are visible."""
    definition = ("SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.proname = 'search_windows'"
                  " AND p.pronamespace = 'windowrag'::regnamespace")
    with scratch_database(db_url, "migration_0033_test") as url, db.connect(url, autocommit=True) as conn:
        _populate(conn, embedder)
        vector = str(embedder.embed_query("second sentence").tolist())
        names_first = "PERFORM windowrag.collection_id(collection);"
        assert names_first in conn.execute(definition).fetchone()[0]
        found = conn.execute("SELECT * FROM windowrag.search_windows('m', 'second sentence', %s::vector)", [vector]).fetchall()
        db.downgrade(conn, "0032")
        assert names_first not in conn.execute(definition).fetchone()[0]
        with pytest.raises(psycopg.errors.UndefinedObject):
            conn.execute("SELECT * FROM windowrag.search_windows('nope', 'x', %s::vector)", [vector])
        db.upgrade(conn)
        assert names_first in conn.execute(definition).fetchone()[0]
        assert conn.execute("SELECT * FROM windowrag.search_windows('m', 'second sentence', %s::vector)",
                            [vector]).fetchall() == found
