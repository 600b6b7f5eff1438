"""Embeddings stored as halfvec (migration 0010): the column and every collection's HNSW index
are halfvec after a fresh install, and 0010 converts a populated database down to 0009 (vector
column, vector indexes) and up again keeping every row, its vector and the search results.

Real embedded Postgres, the real BGE-small model, real ContractNLI contracts; the migration test
works in a database of its own.
"""
from __future__ import annotations

import json

import numpy as np
import psycopg
import pytest
from psycopg import errors, sql

from windowrag_pg.db import connection as db
from windowrag_pg.ingest import Ingestor
from windowrag_pg.sources import SourceDocument
from windowrag_pg.store.collections import (
    MAX_INDEXED_DIMENSION, CollectionError, ensure_collection, vector_expression,
)

from .conftest import read_jsonl

DATABASE = "halfvec_migration_test"
QUERIES = ["Which courts have jurisdiction over disputes?", "return of confidential information",
           "Who may receive confidential information?", "How long do the obligations last after termination?"]


def _column_type(conn) -> str:
    return conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                        "WHERE attrelid = 'windowrag.sentences'::regclass AND attname = 'embedding'").fetchone()[0]


def _hnsw_indexes(conn) -> dict[int, str]:
    """collection id -> definition of its HNSW index."""
    rows = conn.execute("SELECT c.id, pg_get_indexdef(i.oid) FROM windowrag.collections c "
                        "JOIN pg_class i ON i.relname = 'sentences_embedding_hnsw_c' || c.id "
                        "JOIN pg_namespace n ON n.oid = i.relnamespace AND n.nspname = 'windowrag'").fetchall()
    return dict(rows)


def _function_source(conn, name: str) -> str:
    return conn.execute("SELECT prosrc FROM pg_proc WHERE oid = %s::regproc", [f"windowrag.{name}"]).fetchone()[0]


def _rows(conn) -> list[tuple]:
    """Every sentence: id, collection, document, ordinal, text, and its vector in single precision."""
    return [(*row[:5], np.asarray(getattr(row[5], "to_list", lambda: row[5])(), dtype=np.float32)) for row in conn.execute(
        "SELECT id, collection_id, document_id, ordinal, text, embedding::vector FROM windowrag.sentences ORDER BY id")]


def _results(conn, embedder) -> dict:
    """Windows (hybrid), the candidates of budget-first selection and the dense top 10 of each
    query, from the SQL functions (the Python library needs the schema at head; these run at
    0009 too). search_windows gets its candidates explicitly: their default moved in 0018, and
    candidate_sentences its radius: 5 until 0027, 6 since."""
    out = {}
    for query in QUERIES:
        vector = embedder.embed_query(query)
        windows = conn.execute("SELECT document_id, start_char, end_char FROM windowrag.search_windows("
                               "'contracts', %s, %s, k => 5, window_size => 2, candidates => 20)", [query, vector]).fetchall()
        budget = conn.execute("SELECT document_id, section_id, ordinal FROM windowrag.candidate_sentences("
                              "'contracts', %s, %s, radius => 5) ORDER BY 1, 2, 3", [query, vector]).fetchall()
        dense = [r[0] for r in conn.execute("SELECT sentence_id FROM windowrag.dense_search('contracts', %s, 10)",
                                            [vector])]
        out[query] = {"windows": windows, "budget": budget, "dense": dense}
    return out


def _dense_plan(conn, collection_id: int, dimension: int, cast: str, centre: str | None = None) -> str:
    """The plan of the dense top-k statement with sequential scans and sorts priced out (over the
    embeddings minus CENTRE, as a centred halfvec index is: migration 0022)."""
    probe = sql.Literal("[" + ",".join(["0"] * (dimension - 1) + ["1"]) + "]")
    if centre is None:
        order = sql.SQL("s.embedding::{cast}({dim}) <=> {probe}::{cast}({dim})").format(
            cast=sql.Identifier(cast), dim=sql.Literal(dimension), probe=probe)
    else:
        order = sql.SQL("{} <=> {}").format(vector_expression(sql.SQL("s.embedding"), dimension, centre),
                                            vector_expression(probe, dimension, centre))
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_sort = off")
        plan = conn.execute(sql.SQL(
            "EXPLAIN (FORMAT JSON) SELECT s.id FROM windowrag.sentences s WHERE s.collection_id = {cid} "
            "ORDER BY {order} LIMIT 5").format(cid=sql.Literal(collection_id), order=order)).fetchone()[0]
    return json.dumps(plan)


def _assert_same_sentences(before: list[tuple], after: list[tuple], *, exact: bool) -> None:
    assert [r[:5] for r in after] == [r[:5] for r in before]  # every row kept, unchanged
    for old, new in zip(before, after):
        if exact:
            assert np.array_equal(old[5], new[5]), old[:4]
        else:  # rounded to half precision: relative error ≤ 2^-11 of each component
            assert np.all(np.abs(old[5] - new[5]) <= np.abs(old[5]) * 2.0 ** -11 + 1e-7), old[:4]


def test_fresh_install_stores_halfvec(conn, samples_collection):
    assert _column_type(conn) == "halfvec"
    binary = {r[0] for r in conn.execute("SELECT id FROM windowrag.collections WHERE vector_index = 'binary'")}
    indexes = {cid: d for cid, d in _hnsw_indexes(conn).items() if cid not in binary}  # test_binary_index's
    assert indexes and all("::halfvec(" in d and "halfvec_cosine_ops" in d and "m='24'" in d
                           for d in indexes.values()), indexes
    assert "::halfvec(%1$s)" in _function_source(conn, "dense_search")
    cid, dimension = conn.execute("SELECT id, dimension FROM windowrag.collections WHERE name = %s",
                                  [samples_collection]).fetchone()
    centre = conn.execute("SELECT vector_centre::text FROM windowrag.collections WHERE id = %s", [cid]).fetchone()[0]
    assert f"sentences_embedding_hnsw_c{cid}" in _dense_plan(conn, cid, dimension, "halfvec", centre)
    check = conn.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                         "WHERE conname = 'collections_dimension_check'").fetchone()[0]
    assert "4000" in check


def test_a_model_too_wide_for_the_index_is_refused_by_its_dimension(conn, collection_name):
    with pytest.raises(CollectionError, match=r"'wide-model' makes 4096-dimensional embeddings; .* 1 to 4,000"):
        ensure_collection(conn, collection_name, embedding_model="wide-model", dimension=4096)
    assert conn.execute("SELECT count(*) FROM windowrag.collections WHERE name = %s", [collection_name]).fetchone()[0] == 0
    with pytest.raises(errors.CheckViolation):
        conn.execute("INSERT INTO windowrag.collections (name, embedding_model, dimension) VALUES (%s, 'm', %s)",
                     [collection_name, MAX_INDEXED_DIMENSION + 1])
    # the widest that can be indexed is accepted, index and all (no rows needed)
    collection = ensure_collection(conn, collection_name, embedding_model="widest", dimension=MAX_INDEXED_DIMENSION)
    assert f"halfvec({MAX_INDEXED_DIMENSION})" in _hnsw_indexes(conn)[collection.id]
    conn.execute("DELETE FROM windowrag.collections WHERE id = %s", [collection.id])
    conn.execute(sql.SQL("DROP INDEX windowrag.{}").format(sql.Identifier(f"sentences_embedding_hnsw_c{collection.id}")))


def test_migration_0010_down_and_up_on_a_populated_database(db_url, embedder, eval_dir):
    contracts = [SourceDocument(external_id=r["id"], format=r.get("format", "text"), text=r["text"], title=r.get("title"))
                 for r in read_jsonl(eval_dir / "contractnli-dev" / "documents.jsonl", limit=4)]
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DATABASE)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    url = psycopg.conninfo.make_conninfo(db_url, dbname=DATABASE)
    try:
        with psycopg.connect(url, autocommit=True) as raw:
            # a database stopped at 0009 has what 0009 had: vector column, vector functions
            db.upgrade(raw, "0009")
            assert _column_type(raw) == "vector"
            assert "::vector(%1$s)" in _function_source(raw, "dense_search")
            assert "halfvec" not in _function_source(raw, "dense_search") + _function_source(raw, "candidate_sentences")

        with db.connect(url, autocommit=True) as conn:  # to head
            assert _column_type(conn) == "halfvec"
            report = Ingestor(conn, collection="contracts", embedder=embedder).ingest(contracts[:4])
            assert report.added == 4 and not report.errors
            at_head = _rows(conn)
            results_at_head = _results(conn, embedder)
            cid = conn.execute("SELECT id FROM windowrag.collections WHERE name = 'contracts'").fetchone()[0]
            # a 3,000-d collection can be indexed as halfvec, not as vector: the downgrade says so
            conn.execute("INSERT INTO windowrag.collections (name, embedding_model, dimension) VALUES ('wide', 'm', 3000)")
            with pytest.raises(Exception, match=r"'wide' \(3000 dimensions\) .* Nothing was changed"):
                db.downgrade(conn, "0009")
            assert db.current_revision(conn) == db.head_revision() and _column_type(conn) == "halfvec"
            conn.execute("DELETE FROM windowrag.collections WHERE name = 'wide'")

            # down: vector column, vector indexes, the frozen vector functions; nothing lost
            db.downgrade(conn, "0009")
            assert db.current_revision(conn) == "0009" and _column_type(conn) == "vector"
            index = _hnsw_indexes(conn)[cid]
            assert "((embedding)::vector(384)) vector_cosine_ops" in index and "collection_id = " in index
            assert "::vector(%1$s)" in _function_source(conn, "dense_search")
            assert "avg(s.embedding)" in _function_source(conn, "candidate_sentences")
            assert f"sentences_embedding_hnsw_c{cid}" in _dense_plan(conn, cid, 384, "vector")
            _assert_same_sentences(at_head, _rows(conn), exact=True)  # halfvec values are exact in vector
            assert _results(conn, embedder) == results_at_head

            # at 0009, half the vectors take single-precision values (what a 0009 library stored;
            # the Python library itself needs the schema at head)
            conn.execute("UPDATE windowrag.sentences SET embedding = (SELECT array_agg(v + 1e-5 * (o % 7 - 3) ORDER BY o)"
                         " FROM unnest(embedding::real[]) WITH ORDINALITY u (v, o))::vector WHERE id % 2 = 0")
            at_0009 = _rows(conn)
            changed = [r for r in at_0009 if r[0] % 2 == 0]
            assert changed and all(not np.array_equal(r[5], r[5].astype(np.float16).astype(np.float32)) for r in changed)
            results_at_0009 = _results(conn, embedder)

            # a collection too wide for halfvec's index stops the upgrade by name, changing nothing
            conn.execute("INSERT INTO windowrag.collections (name, embedding_model, dimension) VALUES ('huge', 'm', 5000)")
            with pytest.raises(Exception, match=r"'huge' \(5000 dimensions\) .* Nothing was changed"):
                db.upgrade(conn)
            assert db.current_revision(conn) == "0009" and _column_type(conn) == "vector"
            conn.execute("DELETE FROM windowrag.collections WHERE name = 'huge'")

            # up again: halfvec column and indexes; every row kept, each vector rounded to half
            db.upgrade(conn)
            assert db.current_revision(conn) == db.head_revision()
            assert _column_type(conn) == "halfvec"
            index = _hnsw_indexes(conn)[cid]
            assert "((embedding)::halfvec(384)) halfvec_cosine_ops) WITH (m='24')" in index
            assert f"sentences_embedding_hnsw_c{cid}" in _dense_plan(conn, cid, 384, "halfvec")
            after = _rows(conn)
            _assert_same_sentences(at_0009, after, exact=False)
            _assert_same_sentences([r for r in at_head if r[0] % 2], [r for r in after if r[0] % 2],
                                   exact=True)  # already half: unchanged
            results = _results(conn, embedder)
            for query in QUERIES:
                assert results[query]["windows"] == results_at_0009[query]["windows"], query
                assert results[query]["budget"] == results_at_0009[query]["budget"], query
                # the dense top 10 through the halfvec index against the vector one
                assert len(set(results[query]["dense"]) & set(results_at_0009[query]["dense"])) >= 9, query
            assert conn.execute("SELECT count(*) FROM windowrag.documents").fetchone()[0] == 4
    finally:
        with psycopg.connect(db_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DATABASE)))
