"""The centred halfvec index (migration 0022): HNSW over embedding - centre (the mean of the rows
it was built on), the nearest re-ranked by the stored halfvecs."""
from __future__ import annotations

import numpy as np
import pytest

from windowrag_pg.db import connection as db
from windowrag_pg import doctor
from windowrag_pg.doctor import centre_indexes, run_checks
from windowrag_pg.ingest import Ingestor
from windowrag_pg.sources import iter_sources
from windowrag_pg.store.collections import (
    collection_centre, collection_index_name, delete_collection, get_collection, index_statistics,
)

from .conftest import plans_of, scratch_database
from .test_binary_index import EXACT, QUERIES, binary_collection, index_definition  # noqa: F401 (a fixture)


KEY_FUNCTIONS = "SELECT proname FROM pg_proc WHERE starts_with(proname, %s)"


def embeddings(conn, name: str) -> np.ndarray:
    rows = conn.execute("SELECT s.embedding::vector::real[] FROM windowrag.sentences s JOIN windowrag.collections c"
                        " ON c.id = s.collection_id WHERE c.name = %s", [name]).fetchall()
    return np.asarray([r[0] for r in rows], dtype=np.float32)


@pytest.fixture(scope="module")
def centred_collection(db_url, embedder, eval_dir) -> str:
    sources = list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:12]
    with db.connect(db_url, autocommit=True) as conn:
        report = Ingestor(conn, collection="centred_module", embedder=embedder).ingest(sources)
    # bulk-loaded once per session (test_centred_index uses the binary one too)
    assert not report.errors and (report.bulk or report.unchanged == len(sources))
    return "centred_module"


def test_a_bulk_load_centres_the_index_on_its_rows_and_dense_search_reranks_exactly(conn, embedder, centred_collection):
    centre_text = collection_centre(conn, get_collection(conn, centred_collection))
    centre = np.asarray([float(x) for x in centre_text.strip("[]").split(",")])
    vectors = embeddings(conn, centred_collection)
    assert len(vectors) > 600 and centre.shape == (384,)
    # the mean of the rows, to halfvec precision (BGE's shared component: far from 0)
    assert np.abs(centre - vectors.mean(axis=0)).max() < 1e-3 and np.linalg.norm(centre) > 0.5
    definition = index_definition(conn, centred_collection)
    assert "(embedding))::halfvec(384)) halfvec_cosine_ops" in definition  # the key function's call
    assert f"RETURN ((v)::halfvec(384) - '{centre_text}'::halfvec(384))" in definition
    for query in QUERIES:
        vector = embedder.embed_query(query).tolist()
        got = conn.execute("SELECT sentence_id, distance FROM windowrag.dense_search(%s, %s::vector, 10, ef_search => 1000)",
                           [centred_collection, vector]).fetchall()
        # distances are the stored vectors' cosines, not the centred ones
        assert [r[0] for r in got] == [r[0] for r in conn.execute(EXACT, [centred_collection, vector, 10])]
        assert [r[1] for r in got] == sorted(r[1] for r in got)
        exact = conn.execute("SELECT s.embedding::halfvec(384) <=> %s::vector::halfvec(384) FROM windowrag.sentences s"
                             " WHERE s.id = %s", [vector, got[0][0]]).fetchone()[0]
        assert got[0][1] == pytest.approx(exact)
    assert all(c.ok for c in run_checks(conn) if repr(centred_collection) in c.name)


@pytest.mark.parametrize("kind", ["halfvec", "binary"])
def test_dense_search_reads_the_centred_index(conn, embedder, centred_collection, binary_collection, kind):
    # at ~700 rows the planner prefers a sort: without that choice it must find the index, which
    # it only can when the query writes the index's expression, centre literal included
    centred_collection = centred_collection if kind == "halfvec" else binary_collection
    assert collection_centre(conn, get_collection(conn, centred_collection)) is not None
    conn.execute("SET enable_sort = off")
    index = f"sentences_embedding_hnsw_c{get_collection(conn, centred_collection).id}"
    for document_ids in (None, [conn.execute("SELECT min(d.id) FROM windowrag.documents d JOIN windowrag.collections c"
                                             " ON c.id = d.collection_id WHERE c.name = %s",
                                             [centred_collection]).fetchone()[0]]):
        plans = plans_of(conn, "SELECT * FROM windowrag.dense_search(%s, %s::vector, 5, %s)",
                         [centred_collection, embedder.embed_query(QUERIES[1]).tolist(), document_ids])
        assert any(f"Index Scan using {index}" in plan for plan in plans), plans


def test_an_index_built_empty_has_no_centre(conn, embedder, eval_dir, collection_name):
    sources = list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:2]
    report = Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(sources)
    assert not report.bulk and report.sentences > 0
    assert collection_centre(conn, get_collection(conn, collection_name)) is None
    assert "(embedding)::halfvec(384)) halfvec_cosine_ops" in index_definition(conn, collection_name)
    vector = embedder.embed_query(QUERIES[0]).tolist()
    got = conn.execute("SELECT sentence_id FROM windowrag.dense_search(%s, %s::vector, 5, ef_search => 1000)",
                       [collection_name, vector]).fetchall()
    assert got == conn.execute(EXACT, [collection_name, vector, 5]).fetchall()


def test_doctor_fix_centres_an_uncentred_index_beside_it_and_swaps(conn, embedder, eval_dir, collection_name, monkeypatch):
    sources = list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:2]
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(sources)
    collection = get_collection(conn, collection_name)
    assert collection_centre(conn, collection) is None
    monkeypatch.setattr(doctor, "SMALL_COLLECTION", 1)  # the advice is for large collections: any here
    advice = [c for c in run_checks(conn) if c.name == f"HNSW index of {collection_name!r} centred"]
    assert len(advice) == 1 and advice[0].ok and "doctor --fix" in advice[0].fix
    assert collection_name in centre_indexes(conn)
    centre = collection_centre(conn, collection)
    assert centre is not None and f"'{centre}'::halfvec(384)" in index_definition(conn, collection_name)
    assert conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE %s",
                        [f"sentences_embedding_hnsw_c{collection.id}%"]).fetchone()[0] == 1  # no staging index left
    assert not [c for c in run_checks(conn) if c.name == f"HNSW index of {collection_name!r} centred"]
    assert collection_name not in centre_indexes(conn)  # nothing left to do
    vector = embedder.embed_query(QUERIES[2]).tolist()
    got = conn.execute("SELECT sentence_id FROM windowrag.dense_search(%s, %s::vector, 5, ef_search => 1000)",
                       [collection_name, vector]).fetchall()
    assert got == conn.execute(EXACT, [collection_name, vector, 5]).fetchall()


def test_doctor_recentres_an_index_whose_rows_moved_away_from_its_centre(conn, embedder, eval_dir, collection_name,
                                                                       monkeypatch):
    contracts = list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:2]
    articles = list(iter_sources([eval_dir / "squad-dev" / "documents.jsonl"]))[:3]
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=True).ingest(contracts)
    collection = get_collection(conn, collection_name)
    first = collection_centre(conn, collection)
    monkeypatch.setattr(doctor, "SMALL_COLLECTION", 1)
    advice = f"HNSW index of {collection_name!r} centred"
    assert not [c for c in run_checks(conn) if c.name == advice]  # centred on its rows
    # Wikipedia articles written incrementally into a collection of contracts: the mean moves
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(articles)
    assert collection_centre(conn, collection) == first
    [check] = [c for c in run_checks(conn) if c.name == advice]
    assert "away from the rows' mean now" in check.detail and check.ok
    assert collection_name in centre_indexes(conn)
    second = collection_centre(conn, collection)
    assert second != first and f"'{second}'::halfvec(384)" in index_definition(conn, collection_name)
    assert f"'{first}'" not in index_definition(conn, collection_name)
    assert len(conn.execute(KEY_FUNCTIONS, [f"index_key_c{collection.id}_"]).fetchall()) == 1  # the old one dropped
    assert not [c for c in run_checks(conn) if c.name == advice]
    vector = embedder.embed_query("Who founded the university?").tolist()
    got = conn.execute("SELECT sentence_id FROM windowrag.dense_search(%s, %s::vector, 5, ef_search => 1000)",
                       [collection_name, vector]).fetchall()
    assert got == conn.execute(EXACT, [collection_name, vector, 5]).fetchall()


def test_migration_0022_down_and_up_keeps_every_row(db_url, embedder, eval_dir):
    sources = list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:3]
    vector = embedder.embed_query(QUERIES[0]).tolist()
    with scratch_database(db_url, "centred_migration_test") as url, db.connect(url, autocommit=True) as conn:
        Ingestor(conn, collection="centred", embedder=embedder, bulk=True).ingest(sources)
        assert collection_centre(conn, get_collection(conn, "centred")) is not None
        rows = conn.execute("SELECT id, embedding::text, tsv::text FROM windowrag.sentences ORDER BY id").fetchall()
        top = conn.execute("SELECT sentence_id FROM windowrag.dense_search('centred', %s::vector, 5, ef_search => 1000)",
                           [vector]).fetchall()
        key_functions = ("SELECT count(*) FROM pg_proc WHERE pronamespace = 'windowrag'::regnamespace"
                         " AND proname LIKE 'index\\_key\\_c%'")
        assert conn.execute(key_functions).fetchone()[0] == 1  # the centred index's
        db.downgrade(conn, "0021")
        assert conn.execute("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'windowrag'"
                            " AND table_name = 'collections' AND column_name = 'vector_centre'").fetchone()[0] == 0
        assert conn.execute(key_functions).fetchone()[0] == 0  # found by a tester: it outlived the downgrade
        assert index_definition(conn, "centred").endswith(
            "USING hnsw (((embedding)::halfvec(384)) halfvec_cosine_ops) WITH (m='24') WHERE (collection_id = 1)")
        assert conn.execute("SELECT sentence_id FROM windowrag.dense_search('centred', %s::vector, 5, ef_search => 1000)",
                            [vector]).fetchall() == top
        db.upgrade(conn)
        assert collection_centre(conn, get_collection(conn, "centred")) is None  # rebuilt centred by a bulk load
        assert conn.execute("SELECT id, embedding::text, tsv::text FROM windowrag.sentences ORDER BY id").fetchall() == rows
        assert conn.execute("SELECT sentence_id FROM windowrag.dense_search('centred', %s::vector, 5, ef_search => 1000)",
                            [vector]).fetchall() == top


def test_an_incremental_ingest_centres_an_index_built_empty_once_the_collection_has_grown(
        conn, embedder, eval_dir, collection_name, monkeypatch):
    from windowrag_pg.store import collections

    contracts = list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:3]
    monkeypatch.setattr(collections, "CENTRE_AT_SENTENCES", 300)  # 5,000 in use: the rule, on a small collection
    first = Ingestor(conn, collection=collection_name, embedder=embedder, vector_index="binary", bulk=False).ingest(contracts[:1])
    collection = get_collection(conn, collection_name)
    assert first.sentences < 300 and first.index_seconds == 0
    assert index_statistics(conn, collection) == (None, None)  # built on the empty collection
    assert "(binary_quantize(embedding))::bit(384)) bit_hamming_ops" in index_definition(conn, collection_name)
    second = Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(contracts[1:])
    assert not second.errors and first.sentences + second.sentences >= 300 and second.index_seconds > 0
    centre, spread = index_statistics(conn, collection)
    assert centre is not None and spread is not None and "::bit(1152)" in index_definition(conn, collection_name)
    vector = embedder.embed_query(QUERIES[3]).tolist()
    got = conn.execute("SELECT sentence_id FROM windowrag.dense_search(%s, %s::vector, 5, ef_search => 1000)",
                       [collection_name, vector]).fetchall()
    assert got == conn.execute(EXACT, [collection_name, vector, 5]).fetchall()
    # centred once: a later ingest leaves it (drift is doctor's to judge)
    third = Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(
        list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[3:4])
    assert third.index_seconds == 0 and index_statistics(conn, collection) == (centre, spread)


def test_missing_statistics_names_what_an_index_built_on_its_rows_would_have():
    from windowrag_pg.store.collections import Collection, missing_statistics

    halfvec = Collection(1, "h", "m", 384, False, "english", "sentence", None, "halfvec")
    binary = Collection(2, "b", "m", 384, False, "english", "sentence", None, "binary")
    assert missing_statistics(halfvec, None, None).startswith("not centred")
    assert missing_statistics(halfvec, "[0.1]", None) is None
    assert missing_statistics(binary, None, None).startswith("not centred")
    assert missing_statistics(binary, "[0.1]", None).startswith("one sign bit a dimension")
    assert missing_statistics(binary, "[0.1]", "[0.2]") is None


@pytest.mark.parametrize("kind", ["halfvec", "binary"])
def test_the_index_keeps_its_constants_in_a_function_that_goes_with_it(conn, embedder, eval_dir, collection_name, kind):
    sources = list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:2]
    report = Ingestor(conn, collection=collection_name, embedder=embedder, vector_index=kind, bulk=True).ingest(sources)
    assert not report.errors
    collection = get_collection(conn, collection_name)
    prefix = f"index_key_c{collection.id}_"
    assert len(conn.execute(KEY_FUNCTIONS, [prefix]).fetchall()) == 1
    # pg_index keeps the function's call: a row small enough for PostgreSQL 14-17, whose pg_index
    # has no TOAST table (the three-level key's literals made it 8,216 bytes compressed: refused)
    size = conn.execute("SELECT pg_column_size(indexprs) FROM pg_index WHERE indexrelid = to_regclass(%s)",
                        [f"windowrag.{collection_index_name(collection)}"]).fetchone()[0]
    assert size < 1_000
    delete_collection(conn, collection_name)
    assert conn.execute(KEY_FUNCTIONS, [prefix]).fetchall() == []
