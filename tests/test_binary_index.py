"""The binary vector index (migration 0012): a collection setting whose HNSW index is on bits of
the embeddings (three a dimension around the rows' mean since 0023), the nearest by Hamming
distance re-ranked by the stored halfvecs."""
from __future__ import annotations

import json

import numpy as np
import pytest

from windowrag_pg.db import connection as db
from windowrag_pg import doctor
from windowrag_pg.doctor import centre_indexes, run_checks
from windowrag_pg.ingest import Ingestor
from windowrag_pg.retrieve.retriever import Retriever
from windowrag_pg.sources import iter_sources
from windowrag_pg.store.collections import BINARY_SPREAD, CollectionError, collection_index_name, get_collection

from .conftest import plans_of, scratch_database

QUERIES = ["Which information is confidential?", "How long do the obligations last after termination?",
           "return or destroy documents", "governing law and jurisdiction"]
EXACT = """
SELECT s.id FROM windowrag.sentences s JOIN windowrag.collections c ON c.id = s.collection_id
WHERE c.name = %s ORDER BY s.embedding::halfvec(384) <=> %s::vector::halfvec(384), s.id LIMIT %s
"""


def index_definition(conn, name: str) -> str:
    """The collection's CREATE INDEX, then the definition of its key function when it has one
    (store.collections._key_function: the centre and the spread are in its body)."""
    index = f"windowrag.{collection_index_name(get_collection(conn, name))}"
    definition = conn.execute("SELECT pg_get_indexdef(to_regclass(%s))", [index]).fetchone()[0]
    functions = conn.execute(
        "SELECT pg_get_functiondef(p.oid) FROM pg_depend d JOIN pg_proc p ON p.oid = d.refobjid"
        " JOIN pg_namespace n ON n.oid = p.pronamespace WHERE d.classid = 'pg_class'::regclass"
        " AND d.objid = to_regclass(%s) AND d.refclassid = 'pg_proc'::regclass AND n.nspname = 'windowrag'",
        [index]).fetchall()
    return "\n".join([definition, *(f for (f,) in functions)])


@pytest.fixture(scope="module")
def binary_collection(db_url, embedder, eval_dir) -> str:
    sources = list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:12]
    with db.connect(db_url, autocommit=True) as conn:
        report = Ingestor(conn, collection="binary_module", embedder=embedder, vector_index="binary").ingest(sources)
    # bulk-loaded once per session (test_centred_index uses the binary one too)
    assert not report.errors and (report.bulk or report.unchanged == len(sources))
    return "binary_module"


def test_the_index_is_on_three_levels_a_dimension_and_dense_search_reranks_exactly(conn, embedder, binary_collection):
    # a bulk load centres it (migration 0022) and spreads it (0023): three bits a dimension, above
    # -spread, 0 and +spread around the rows' mean, spread 0.9 of their standard deviation
    centre, spread = conn.execute("SELECT vector_centre::text, vector_spread::text FROM windowrag.collections"
                                  " WHERE name = %s", [binary_collection]).fetchone()
    definition = index_definition(conn, binary_collection)
    # keyed by a function that holds the constants (pg_index rows are too small for them before
    # PostgreSQL 18: store.collections._key_function)
    assert "(windowrag.index_key_c" in definition and "(embedding))::bit(1152)) bit_hamming_ops" in definition
    centred = f"(((v)::halfvec(384) - '{centre}'::halfvec(384)))::halfvec(384))"
    assert f"binary_quantize({centred})::bit(384)" in definition
    assert f"'{spread}'::halfvec(384)" in definition and definition.count(f"'{centre}'") == 3
    assert "::bit(1152)) bit_hamming_ops) WITH (m='16', ef_construction='128')" in definition
    vectors = np.array([json.loads(v) for (v,) in conn.execute(
        "SELECT s.embedding::text FROM windowrag.sentences s JOIN windowrag.collections c ON c.id = s.collection_id"
        " WHERE c.name = %s", [binary_collection])])
    np.testing.assert_allclose(json.loads(centre), vectors.mean(axis=0), atol=2e-3)
    np.testing.assert_allclose(json.loads(spread), BINARY_SPREAD * vectors.std(axis=0), rtol=2e-2, atol=1e-4)
    assert get_collection(conn, binary_collection).vector_index == "binary"
    size = conn.execute("SELECT count(*) FROM windowrag.sentences s JOIN windowrag.collections c"
                        " ON c.id = s.collection_id WHERE c.name = %s", [binary_collection]).fetchone()[0]
    assert size > 600
    for query in QUERIES:
        vector = embedder.embed_query(query).tolist()
        # a candidate pool as large as the collection: the re-ranking makes the top 10 exact
        got = conn.execute("SELECT sentence_id, distance FROM windowrag.dense_search(%s, %s::vector, 10, ef_search => 1000)",
                           [binary_collection, vector]).fetchall()
        assert [r[0] for r in got] == [r[0] for r in conn.execute(EXACT, [binary_collection, vector, 10])]
        assert [r[1] for r in got] == sorted(r[1] for r in got)
        # the default pool (100 by Hamming distance) still finds most of the exact top 5
        default = {r[0] for r in conn.execute("SELECT sentence_id FROM windowrag.dense_search(%s, %s::vector, 5)",
                                              [binary_collection, vector])}
        assert len(default & {r[0] for r in conn.execute(EXACT, [binary_collection, vector, 5])}) >= 4, query
    contexts = Retriever(conn, embedder=embedder, collection=binary_collection).search(QUERIES[0], k=3).contexts
    assert len(contexts) == 3 and all(c.text for c in contexts)
    assert all(c.ok for c in run_checks(conn) if repr(binary_collection) in c.name)


def test_the_setting_is_fixed_at_creation(conn, embedder, binary_collection, collection_name):
    with pytest.raises(CollectionError, match="binary vector index, not halfvec"):
        Ingestor(conn, collection=binary_collection, embedder=embedder, vector_index="halfvec")
    assert Ingestor(conn, collection=binary_collection, embedder=embedder).collection.vector_index == "binary"
    with pytest.raises(CollectionError, match="vector_index must be one of halfvec, binary, not 'bits'"):
        Ingestor(conn, collection=collection_name, embedder=embedder, vector_index="bits")
    assert conn.execute("SELECT count(*) FROM windowrag.collections WHERE name = %s", [collection_name]).fetchone()[0] == 0


def test_migration_0012_down_and_up_keeps_every_row(db_url, embedder, eval_dir):
    sources = list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:3]
    with scratch_database(db_url, "binary_migration_test") as url, db.connect(url, autocommit=True) as conn:
        Ingestor(conn, collection="bits", embedder=embedder, vector_index="binary").ingest(sources)
        rows = conn.execute("SELECT id, embedding::text, tsv::text FROM windowrag.sentences ORDER BY id").fetchall()
        db.downgrade(conn, "0011")
        assert "halfvec_cosine_ops" in conn.execute(
            "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE c.relname LIKE 'sentences_embedding_hnsw_c%%'").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM windowrag.dense_search('bits', %s::vector, 5)",
                            [embedder.embed_query(QUERIES[0]).tolist()]).fetchone()[0] == 5
        db.upgrade(conn)
        assert conn.execute("SELECT vector_index FROM windowrag.collections").fetchone()[0] == "halfvec"
        assert conn.execute("SELECT id, embedding::text, tsv::text FROM windowrag.sentences ORDER BY id").fetchall() == rows


def test_migration_0023_down_and_up_then_doctor_gives_the_old_index_three_levels(db_url, embedder, eval_dir, monkeypatch):
    sources = list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:3]
    vector = embedder.embed_query(QUERIES[1]).tolist()
    top = "SELECT sentence_id FROM windowrag.dense_search('levels', %s::vector, 5, ef_search => 1000)"
    advice = "HNSW index of 'levels' centred"
    with scratch_database(db_url, "levels_migration_test") as url, db.connect(url, autocommit=True) as conn:
        Ingestor(conn, collection="levels", embedder=embedder, vector_index="binary", bulk=True).ingest(sources)
        centre = conn.execute("SELECT vector_centre::text FROM windowrag.collections").fetchone()[0]
        rows = conn.execute("SELECT id, embedding::text, tsv::text FROM windowrag.sentences ORDER BY id").fetchall()
        exact = conn.execute(EXACT, ["levels", vector, 5]).fetchall()
        assert conn.execute(top, [vector]).fetchall() == exact
        db.downgrade(conn, "0022")
        # the index 0022 built: the sign bits of the centred embeddings, one a dimension
        assert index_definition(conn, "levels").endswith(
            f"USING hnsw (((binary_quantize((((embedding)::halfvec(384) - '{centre}'::halfvec(384)))::halfvec(384)))"
            "::bit(384)) bit_hamming_ops) WITH (m='24') WHERE (collection_id = 1)")
        assert conn.execute(top, [vector]).fetchall() == exact
        db.upgrade(conn)
        assert conn.execute("SELECT id, embedding::text, tsv::text FROM windowrag.sentences ORDER BY id").fetchall() == rows
        assert "::bit(384)) bit_hamming_ops" in index_definition(conn, "levels")  # kept as it was
        assert conn.execute(top, [vector]).fetchall() == exact
        # and still read through it: the live dense_search passes the centre as a parameter (0024)
        conn.execute("SET enable_sort = off")
        index = collection_index_name(get_collection(conn, 'levels'))
        plans = plans_of(conn, "SELECT * FROM windowrag.dense_search('levels', %s::vector, 5)", [vector])
        assert any(f"Index Scan using {index}" in plan for plan in plans), plans
        conn.execute("RESET enable_sort")
        monkeypatch.setattr(doctor, "SMALL_COLLECTION", 1)  # the advice is for large collections: any here
        [check] = [c for c in run_checks(conn) if c.name == advice]
        assert "one sign bit a dimension" in check.detail and check.ok
        assert centre_indexes(conn) == ["levels"]
        assert "::bit(1152)) bit_hamming_ops" in index_definition(conn, "levels")
        assert not [c for c in run_checks(conn) if c.name == advice]
        assert conn.execute(top, [vector]).fetchall() == exact
