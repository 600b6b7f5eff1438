"""Moving a collection to another embedding model (issue 12, item 9): re-embedded in place, in one
transaction; a reader sees all old vectors or all new ones, never a mix."""
from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import psycopg
import pytest

import windowrag_pg as wr
from windowrag_pg.embed.base import Embedder, l2_normalise
from windowrag_pg.embed.headers import embedding_text
from windowrag_pg.embed.onnx_bge import OnnxBgeEmbedder
from windowrag_pg.ingest import Ingestor
from windowrag_pg.pipeline import Pipeline
from windowrag_pg.retrieve.retriever import QueryError
from windowrag_pg.sources import SourceDocument, iter_sources
from windowrag_pg.store.collections import CollectionError


class TruncatedBge(Embedder):
    """Another real model: BGE-small's first 256 dimensions, renormalised (another dimension, another id)."""

    model_id = "onnx:bge-small-en-v1.5-int8-256d"

    def __init__(self) -> None:
        self.full = OnnxBgeEmbedder()
        self.query_instruction = self.full.query_instruction
        self.embedded = 0

    @property
    def dimension(self) -> int:
        return 256

    def count_tokens(self, texts):
        return self.full.count_tokens(texts)

    def _embed(self, texts, *, batch_size, progress):
        self.embedded += len(texts)
        return l2_normalise(self.full._embed(texts, batch_size=batch_size, progress=progress)[:, :256])


def consistency(conn, collection: str) -> tuple[int, str, int, int]:
    """(dimension, model, sentences, sentences whose vector has the collection's dimension), in one statement."""
    return conn.execute(
        "SELECT c.dimension, c.embedding_model, count(s.id), count(s.id) FILTER (WHERE vector_dims(s.embedding) = c.dimension)"
        " FROM windowrag.collections c LEFT JOIN windowrag.sentences s ON s.collection_id = c.id"
        " WHERE c.name = %s GROUP BY c.dimension, c.embedding_model", [collection]).fetchone()


@pytest.mark.slow  # about a minute: 3 contracts embedded twice
def test_reembed_moves_a_collection_to_another_model_atomically(db_url, conn, collection_name, embedder, eval_dir):
    # titles someone wrote (the contracts' own are file names, which headers leave out)
    contracts = [dataclasses.replace(source, title=f"Confidentiality agreement {number}") for number, source
                 in enumerate(list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:3], start=1)]
    report = Ingestor(conn, collection=collection_name, embedder=embedder, contextual_headers=True).ingest(contracts)
    assert not report.errors
    old = consistency(conn, collection_name)
    old_id = conn.execute("SELECT id FROM windowrag.collections WHERE name = %s", [collection_name]).fetchone()[0]
    documents_before = wr.list_documents(conn, collection=collection_name)
    assert old[0] == 384 and old[2] == old[3] > 100
    gaps = ("SELECT d.external_id, s.ordinal, s.gap FROM windowrag.sentences s JOIN windowrag.documents d"
            " ON d.id = s.document_id WHERE d.collection_id = (SELECT id FROM windowrag.collections WHERE name = %s)"
            " ORDER BY 1, 2")
    written = conn.execute(gaps, [collection_name]).fetchall()
    assert all(gap is not None for *_, gap in written)
    # as if written before migration 0014: the copy cuts these gaps from the documents
    conn.execute("UPDATE windowrag.sentences SET gap = NULL WHERE collection_id = %s AND ordinal %% 3 = 0", [old_id])

    seen: list[tuple] = []
    stop = threading.Event()

    def reader() -> None:
        with psycopg.connect(db_url, autocommit=True) as watcher:
            while not stop.is_set():
                seen.append(consistency(watcher, collection_name))

    thread = threading.Thread(target=reader)
    thread.start()
    new = TruncatedBge()
    try:
        count = wr.reembed_collection(conn, collection_name, new)
    finally:
        stop.set()
        thread.join()
    assert count == old[2] and new.embedded == old[2]
    assert conn.execute(gaps, [collection_name]).fetchall() == written
    assert consistency(conn, collection_name) == (256, new.model_id, old[2], old[2])
    after = wr.list_documents(conn, collection=collection_name)
    assert [{k: v for k, v in d.items() if k != "updated_at"} for d in after] == \
        [{k: v for k, v in d.items() if k != "updated_at"} for d in documents_before]
    assert seen and all(row[2] == row[3] for row in seen)  # every snapshot: all vectors of its model
    assert {row[0] for row in seen} <= {384, 256} and seen[0][0] == 384
    # the new index serves the new model's queries; the old model is refused by name
    cid = conn.execute("SELECT id FROM windowrag.collections WHERE name = %s", [collection_name]).fetchone()[0]
    assert conn.execute("SELECT count(*) FROM pg_class WHERE relname = %s", [f"sentences_embedding_hnsw_c{old_id}"]
                        ).fetchone() == (0,)  # the old index is gone
    assert conn.execute("SELECT count(*) FROM windowrag.sentences WHERE collection_id = %s", [old_id]).fetchone() == (0,)
    index = conn.execute("SELECT pg_get_indexdef(%s::regclass)", [f"windowrag.sentences_embedding_hnsw_c{cid}"]).fetchone()[0]
    assert "(embedding))::halfvec(256)) halfvec_cosine_ops" in index  # keyed by its key function
    keys = "SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE starts_with(p.proname, %s)"
    [(key,)] = conn.execute(keys, [f"index_key_c{cid}_"]).fetchall()
    assert "RETURN ((v)::halfvec(256) - '[" in key  # centred on the new rows
    assert conn.execute(keys, [f"index_key_c{old_id}_"]).fetchall() == []  # the old index's went with it
    result = Pipeline(conn, collection=collection_name, embedder=new).search(
        "Which courts have jurisdiction over disputes?", k=3)
    assert result.contexts and all(h["dense_rank"] is not None for c in result.contexts[:1] for h in c.hits[:1])
    with pytest.raises(QueryError, match="was embedded with 'onnx:bge-small-en-v1.5-int8-256d'"):
        Pipeline(conn, collection=collection_name, embedder=embedder).search("courts", k=3)
    # the new vectors are the new model's embedding of what the ingest embedded (contextual headers)
    sentence, title, path, stored = conn.execute(
        "SELECT s.text, d.title, sec.heading_path, s.embedding FROM windowrag.sentences s"
        " JOIN windowrag.documents d ON d.id = s.document_id JOIN windowrag.sections sec ON sec.id = s.section_id"
        " WHERE s.collection_id = %s ORDER BY s.id LIMIT 1", [cid]).fetchone()
    with_header = new.embed_documents([embedding_text(sentence, title=title, heading_path=path)])[0]
    bare = new.embed_documents([sentence])[0]
    # (int8 dynamic quantisation makes a vector depend slightly on its batch: compare by cosine)
    assert float(stored.to_numpy() @ with_header) > 0.99 and float(stored.to_numpy() @ with_header) > float(stored.to_numpy() @ bare)
    # ingesting into it now takes the new model only
    more = SourceDocument(external_id="extra", format="text", text="Disputes go to the courts of Geneva.")
    assert Ingestor(conn, collection=collection_name, embedder=new, contextual_headers=True).ingest([more]).added == 1


class PermutedBge(TruncatedBge):
    """Another real model of the same dimension: BGE-small with its dimensions in reverse order
    (the old model's queries find nonsense among its vectors)."""

    model_id = "onnx:bge-small-en-v1.5-int8-reversed"

    @property
    def dimension(self) -> int:
        return 384

    def _embed(self, texts, *, batch_size, progress):
        return self.full._embed(texts, batch_size=batch_size, progress=progress)[:, ::-1].copy()


def test_a_pipeline_made_before_a_reembed_follows_the_new_model(conn, collection_name, embedder):
    """A long-lived pipeline (windowrag_pg.search keeps one a process) caches its collection: after
    `reembed` swapped in a collection of another model it read the new vectors with the old
    model's queries, silently. Now its search finds the swap and reads the collection again: with
    the new model given it answers; without one, the new model (not loadable by name) is asked for."""
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(iter_sources([Path(wr.__file__).parent / "samples"]))
    question = "Which courts have jurisdiction over disputes?"
    unnamed, named = Pipeline(conn, collection=collection_name), Pipeline(conn, collection=collection_name, embedder=PermutedBge())
    expected = unnamed.search(question, token_budget=200, min_relevance=None).contexts[0].text
    with pytest.raises(QueryError, match="was embedded with 'onnx:bge-small-en-v1.5-int8'"):
        named.search(question, token_budget=200)
    wr.reembed_collection(conn, collection_name, PermutedBge())
    assert named.search(question, token_budget=200, min_relevance=None).contexts[0].text == expected
    assert named.retriever.search(question, k=1).contexts[0].hits[0].dense_rank == 1
    with pytest.raises(QueryError, match="'onnx:bge-small-en-v1.5-int8-reversed', an ONNX model folder"):
        unnamed.search(question, token_budget=200)
    with pytest.raises(QueryError, match="an ONNX model folder"):
        unnamed.retriever.search(question, k=1)
    # deleted since: said as for a collection that never was
    wr.delete_collection(conn, collection_name)
    with pytest.raises(CollectionError, match=f"collection '{collection_name}' does not exist"):
        named.search(question, token_budget=200)
