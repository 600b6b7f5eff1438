"""Move a collection to another embedding model: every sentence embedded again, then swapped in
with one transaction, so that a reader sees the old collection (old model, dimension, vectors)
or the new one, never a mix.

The embedding, which takes the time, happens before the transaction, without locks. The
transaction takes the collection's write lock, embeds what was written meanwhile, builds a copy
of the collection under a temporary name with the new vectors (documents, sections and
sentences copied in three INSERT … SELECT, the vectors from a COPY stage, BM25 statistics by
the insert trigger) and its HNSW index, deletes the original and gives the copy its name.
A copy rather than an UPDATE in place: the index of a new dimension cannot be built in the
transaction that replaces the vectors (it also reads the replaced row versions, of the old
dimension). Readers are never blocked; the old collection's index is dropped after the commit.
Internal ids change (collection, documents, sentences); external ids, texts, metadata stay.
"""
from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import psycopg
from psycopg import sql

from .db.sqlfiles import load_sql
from .embed.base import Embedder
from .embed.headers import embedding_text
from .store.collections import (
    Collection, check_dimension, check_role_may, collection_index_name, drop_unused_index_keys, ensure_collection_index,
    get_collection,
)


def reembed_collection(conn: psycopg.Connection, name: str, embedder: Embedder, *,
                       on_units: Callable[[int], None] | None = None) -> int:
    """Re-embed collection NAME with EMBEDDER, which becomes its model; returns the number of
    sentences. Writers of the collection wait for the swap (and then find it gone: an ingest
    running meanwhile must start again, with the new model)."""
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise ValueError("reembed: the connection has a transaction in progress; commit or roll it back first")
    check_dimension(embedder.model_id, embedder.dimension)  # before minutes of embedding
    with conn.transaction():
        old = get_collection(conn, name)
        check_role_may(conn, "may_reembed", action="re-embed", collection=name,
                       needs="the schema's owner, who creates collections and their vector indexes")
        rows = _sentences(conn, old, None)
    vectors = _embed(rows, old, embedder, on_units)  # minutes for a big collection: no transaction open
    with conn.transaction():
        conn.execute(load_sql("no_statement_timeout_local"))
        conn.execute(load_sql("lock_collection_writes"), [old.id])
        current = {row[0] for row in conn.execute(load_sql("collection_sentence_ids"), [old.id])}
        written_meanwhile = sorted(current - vectors.keys())
        if written_meanwhile:
            vectors.update(_embed(_sentences(conn, old, written_meanwhile), old, embedder, on_units))
        conn.execute(load_sql("stage_embeddings"))
        with conn.cursor().copy(load_sql("copy_embedding_stage")) as copy:
            copy.set_types(["int8", "vector"])
            for sentence_id in current:
                copy.write_row((sentence_id, vectors[sentence_id]))
        temporary_name = f"{name[:150]}~reembed~{os.getpid()}"
        new_id = conn.execute(load_sql("reembed_new_collection"), {
            "temporary_name": temporary_name, "model": embedder.model_id, "dimension": embedder.dimension,
            "collection_id": old.id}).fetchone()[0]
        ids = {"new_id": new_id, "collection_id": old.id}
        conn.execute(load_sql("defer_bm25"))  # the copy's BM25 is counted and packed once, below
        for step in ("reembed_copy_documents", "reembed_copy_sections", "reembed_copy_sentences"):
            conn.execute(load_sql(step), ids)
        conn.execute(load_sql("bm25_rebuild"), [new_id])
        conn.execute(load_sql("delete_collection"), [old.id])
        conn.execute(load_sql("rename_collection"), [name, new_id])
        ensure_collection_index(conn, get_collection(conn, name))
    conn.execute(sql.SQL(load_sql("drop_collection_index")).format(concurrently=sql.SQL(""),
        index_name=sql.Identifier(collection_index_name(old))))
    drop_unused_index_keys(conn, old)
    if not conn.autocommit:
        conn.commit()
    return len(current)


def _sentences(conn: psycopg.Connection, collection: Collection, ids: list[int] | None) -> list[tuple]:
    """(id, text, document title, section path) of the collection's sentences, or of IDS."""
    return conn.execute(load_sql("reembed_sentences"), {"collection_id": collection.id, "ids": ids}).fetchall()


def _embed(rows: list[tuple], collection: Collection, embedder: Embedder,
           on_units: Callable[[int], None] | None) -> dict[int, np.ndarray]:
    """What the ingest embedded for each sentence (with its contextual header when the collection
    has them), embedded by EMBEDDER."""
    texts = [embedding_text(text, title=title, heading_path=path) if collection.contextual_headers else text
             for _, text, title, path in rows]
    vectors = embedder.embed_documents(texts, progress=on_units)
    return {row[0]: vector for row, vector in zip(rows, vectors)}
