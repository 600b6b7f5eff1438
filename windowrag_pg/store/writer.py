"""Write one document (its sections and sentence rows) in one transaction, with COPY.

The caller has parsed, split and embedded the document; this module only touches the database.
A crash at any point leaves either the old version of the document or the new one, never a mix.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from ..db.sqlfiles import load_sql
from ..parse.types import ParsedDocument, Unit
from ..split.gaps import unit_gaps
from .collections import Collection, CollectionError


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    external_id: str
    title: str | None
    source: str | None
    format: str
    metadata: dict
    content_hash: str


def existing_hash(conn: psycopg.Connection, collection: Collection, external_id: str) -> str | None:
    row = conn.execute(load_sql("document_hash"), [collection.id, external_id]).fetchone()
    return row[0] if row else None


def write_document(
    conn: psycopg.Connection,
    collection: Collection,
    record: DocumentRecord,
    parsed: ParsedDocument,
    units: list[Unit],
    embeddings: np.ndarray,
    token_counts: list[int],
    *,
    bm25_deferred: bool = False,
) -> str:
    """Insert or replace the document; returns "added", "replaced" or "unchanged".
    bm25_deferred: a bulk load's write; the BM25 triggers skip it (windowrag.bm25_rebuild counts
    it at the end of the load) and its commit does not wait for the WAL flush (sql/bulk_document.sql)."""
    if len(units) != len(embeddings) or len(units) != len(token_counts):
        raise ValueError("units, embeddings and token counts differ in length")
    with conn.transaction():
        lock_collection_writes(conn, collection)
        if bm25_deferred:
            conn.execute(load_sql("bulk_document"))
        old = conn.execute(load_sql("lock_document"), [collection.id, record.external_id]).fetchone()
        if old is not None and old[1] == record.content_hash:
            return "unchanged"
        if old is not None:
            conn.execute(load_sql("delete_document_by_id"), [old[0]])
        document_id = conn.execute(
            load_sql("insert_document"),
            {
                "collection_id": collection.id,
                "external_id": record.external_id,
                "title": record.title,
                "source": record.source,
                "format": record.format,
                "metadata": Jsonb(record.metadata),
                "content_hash": record.content_hash,
                "text": parsed.text,
                "sentence_count": len(units),
            },
        ).fetchone()[0]
        _copy_sections(conn, document_id, parsed, units)
        _copy_sentences(conn, collection, document_id, units, unit_gaps(parsed.text, units), embeddings,
                        token_counts)
    return "replaced" if old is not None else "added"


def lock_collection_writes(conn: psycopg.Connection, collection: Collection) -> None:
    """The locking rule (sql/lock_collection_writes.sql), inside the caller's transaction."""
    if conn.execute(load_sql("lock_collection_writes"), [collection.id]).fetchone() is None:
        raise CollectionError(f"collection {collection.name!r} no longer exists (deleted meanwhile?)")


def stored_content(conn: psycopg.Connection, collection: Collection, external_id: str) -> tuple | None:
    """(content_hash, text, format, title) of the stored document, or None."""
    return conn.execute(load_sql("document_content"), [collection.id, external_id]).fetchone()


def update_metadata(conn: psycopg.Connection, collection: Collection, record: DocumentRecord, *,
                    expected_hash: str) -> bool:
    """Store RECORD's metadata (and hash, source) on the stored document, whose sections and
    sentences stay as they are; False when it changed since EXPECTED_HASH was read."""
    with conn.transaction():
        lock_collection_writes(conn, collection)
        old = conn.execute(load_sql("lock_document"), [collection.id, record.external_id]).fetchone()
        if old is None or old[1] != expected_hash:
            return False
        conn.execute(load_sql("update_document_metadata"), {
            "id": old[0], "metadata": Jsonb(record.metadata), "content_hash": record.content_hash,
            "source": record.source})
    return True


def delete_document(conn: psycopg.Connection, collection: Collection, external_id: str) -> bool:
    with conn.transaction():
        lock_collection_writes(conn, collection)
        row = conn.execute(load_sql("delete_document"), [collection.id, external_id]).fetchone()
    return row is not None


def _copy_sections(conn: psycopg.Connection, document_id: int, parsed: ParsedDocument, units: list[Unit]) -> None:
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for ordinal, unit in enumerate(units):
        first.setdefault(unit.section_ordinal, ordinal)
        last[unit.section_ordinal] = ordinal
    conn.execute(load_sql("stage_sections"))
    with conn.cursor().copy(load_sql("copy_stage_sections")) as copy:
        for section in parsed.sections:
            copy.write_row((
                section.ordinal, list(section.heading_path), section.level, section.start_char,
                section.end_char, first.get(section.ordinal), last.get(section.ordinal),
            ))
    conn.execute(load_sql("insert_staged_sections"), {"document_id": document_id})


def _copy_sentences(
    conn: psycopg.Connection,
    collection: Collection,
    document_id: int,
    units: list[Unit],
    gaps: list[str | None],
    embeddings: np.ndarray,
    token_counts: list[int],
) -> None:
    conn.execute(load_sql("stage_sentences"))
    with conn.cursor().copy(load_sql("copy_stage")) as copy:
        copy.set_types(["int4", "int4", "int4", "int4", "text", "text", "text", "int4", "int4", "vector"])
        for ordinal, (unit, gap, vector, tokens) in enumerate(zip(units, gaps, embeddings, token_counts)):
            copy.write_row((
                ordinal, unit.section_ordinal, unit.start_char, unit.end_char, unit.kind, unit.text, gap,
                tokens, unit.page, vector,
            ))
    conn.execute(
        load_sql("insert_staged_sentences"),
        {"collection_id": collection.id, "document_id": document_id, "ts_config": collection.ts_config},
    )
