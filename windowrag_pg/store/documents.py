"""Reading the documents of a collection: list them (with filters), and say which filter
matches nothing (`source=` is the file path; the metadata key is `metadata.source=`)."""
from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from ..db.sqlfiles import load_sql
from ..db.statements import Statement, Steps
from ..retrieve.filters import COLUMNS, compile_filters
from .collections import Collection

LIST_LIMIT = 100_000
# What the column filters mean, for notes about a filter that matches nothing.
COLUMN_MEANINGS = {"document_id": "the document's id", "source": "the file path the document was read from",
                   "title": "the document's title"}


def list_documents(conn: psycopg.Connection, collection: Collection, *, filters: dict[str, Any] | None = None,
                   limit: int = LIST_LIMIT) -> list[dict[str, Any]]:
    """Id, title, source, format, sentence and section counts, metadata and update time of each
    document matching FILTERS (the filter language of searches), ordered by id."""
    condition, params = compile_filters(filters)
    statement = sql.SQL(load_sql("list_documents")).format(condition=condition)
    cur = conn.execute(statement, {**params, "collection_id": collection.id, "limit": limit})
    names = ["id" if c.name == "external_id" else ("sentences" if c.name == "sentence_count" else c.name)
             for c in cur.description]
    rows = [dict(zip(names, row)) for row in cur.fetchall()]
    if not conn.autocommit:
        conn.rollback()
    return rows


def unmatched_filters(conn: psycopg.Connection, collection: Collection, filters: dict[str, Any] | None) -> list[str]:
    """A note for each filter key that matches no document of COLLECTION on its own."""
    steps = unmatched_filter_steps(collection, filters)
    rows = None
    try:
        while True:
            statement = steps.send(rows)
            rows = conn.execute(statement.query, statement.params).fetchall()
    except StopIteration as done:
        if not conn.autocommit:
            conn.rollback()
        return done.value


def unmatched_filter_steps(collection: Collection, filters: dict[str, Any] | None) -> Steps[list[str]]:
    """unmatched_filters as steps (windowrag_pg.db.statements), for the retriever."""
    notes = []
    for key, condition in (filters or {}).items():
        compiled, params = compile_filters({key: condition})
        statement = sql.SQL(load_sql("count_filtered_documents")).format(condition=compiled)
        rows = yield Statement(statement, {**params, "collection_id": collection.id})
        if rows[0][0]:
            continue
        note = f"filter {key}={condition!r} matches no document of collection {collection.name!r}"
        if key in COLUMNS:
            note += f" ({key} is {COLUMN_MEANINGS[key]}; the metadata key is metadata.{key})"
        elif key.removeprefix("metadata.") in COLUMNS:
            bare = key.removeprefix("metadata.")
            note += f" ({key} is a metadata key; {COLUMN_MEANINGS[bare]} is {bare})"
        notes.append(note)
    return notes
