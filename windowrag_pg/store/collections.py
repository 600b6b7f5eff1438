"""Collections: a named set of documents embedded with one model."""
from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql

from ..db.sqlfiles import load_sql


class CollectionError(ValueError):
    """A collection cannot be used as asked (unknown, or built with another model)."""


@dataclass(frozen=True, slots=True)
class Collection:
    id: int
    name: str
    embedding_model: str
    dimension: int
    contextual_headers: bool
    ts_config: str
    unit: str
    chunk_tokens: int | None


def get_collection(conn: psycopg.Connection, name: str) -> Collection:
    row = conn.execute(load_sql("get_collection"), [name]).fetchone()
    if row is None:
        raise CollectionError(f"collection {name!r} does not exist (ingest documents into it first)")
    return Collection(*row)


def ensure_collection(
    conn: psycopg.Connection,
    name: str,
    *,
    embedding_model: str,
    dimension: int,
    contextual_headers: bool = False,
    unit: str = "sentence",
    chunk_tokens: int | None = None,
) -> Collection:
    """Get or create NAME; refuse a model, dimension or unit other than the collection's own."""
    conn.execute(
        "INSERT INTO windowrag.collections (name, embedding_model, dimension, contextual_headers, unit, chunk_tokens)"
        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO NOTHING",
        [name, embedding_model, dimension, contextual_headers, unit, chunk_tokens],
    )
    collection = get_collection(conn, name)
    if (collection.embedding_model, collection.dimension) != (embedding_model, dimension):
        raise CollectionError(
            f"collection {name!r} holds vectors of model {collection.embedding_model!r} "
            f"({collection.dimension}-d); refusing vectors of {embedding_model!r} ({dimension}-d). "
            "Use another collection name or the collection's model."
        )
    if (collection.unit, collection.chunk_tokens) != (unit, chunk_tokens):
        raise CollectionError(
            f"collection {name!r} stores {collection.unit} units (chunk_tokens={collection.chunk_tokens}); "
            f"refusing {unit} units (chunk_tokens={chunk_tokens})"
        )
    if collection.contextual_headers != contextual_headers:
        raise CollectionError(
            f"collection {name!r} was built with contextual_headers={collection.contextual_headers}; "
            "embedding new documents otherwise would mix two kinds of vectors"
        )
    ensure_collection_index(conn, collection)
    return collection


def collection_index_name(collection: Collection) -> str:
    return f"sentences_embedding_hnsw_c{collection.id}"


def ensure_collection_index(conn: psycopg.Connection, collection: Collection) -> None:
    statement = sql.SQL(load_sql("collection_index")).format(
        index_name=sql.Identifier(collection_index_name(collection)),
        dimension=sql.Literal(collection.dimension),
        collection_id=sql.Literal(collection.id),
    )
    conn.execute(statement)


def list_collection_stats(conn: psycopg.Connection) -> list[dict]:
    cur = conn.execute(load_sql("collection_stats"))
    names = [c.name for c in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]
