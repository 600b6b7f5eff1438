"""Write documents (their sections and sentence rows) in one transaction, with COPY: one document
a transaction for the incremental ingest, a batch of them for a bulk load.

The caller has parsed, split and embedded the documents; this module only touches the database.
A crash at any point leaves either the old version of each document or the new one, never a mix.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from ..db.sqlfiles import load_sql
from ..parse.types import ParsedDocument, Unit
from ..split.gaps import unit_gaps
from .collections import WRITER_OR_OWNER, Collection, CollectionError, check_role_may


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


@dataclass(frozen=True, slots=True)
class DocumentRows:
    """One document ready to store: parsed, split, embedded and counted."""
    record: DocumentRecord
    parsed: ParsedDocument
    units: list[Unit]
    embeddings: np.ndarray
    token_counts: list[int]

    def __post_init__(self) -> None:
        if len(self.units) != len(self.embeddings) or len(self.units) != len(self.token_counts):
            raise ValueError(f"document {self.record.external_id!r}: units, embeddings and token counts differ in length")


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
    """Insert or replace one document in its own transaction; returns "added", "replaced" or
    "unchanged" (write_documents with one document)."""
    return write_documents(conn, collection, [DocumentRows(record, parsed, units, embeddings, token_counts)],
                           bulk=bm25_deferred)[0]


def write_documents(conn: psycopg.Connection, collection: Collection, documents: list[DocumentRows], *,
                    bulk: bool = False) -> list[str]:
    """Insert or replace the documents in ONE transaction: all of them or none. Returns each one's
    status ("added", "replaced", or "unchanged" when the stored version has the same content
    hash), in order. The incremental ingest writes one document a transaction; a bulk load
    (BULK) a batch of them (the same statements for all its rows), with the BM25 triggers skipped
    (windowrag.bm25_rebuild counts the rows at the end of the load) and its commit not waiting
    for the WAL flush (sql/bulk_document.sql)."""
    external_ids = [d.record.external_id for d in documents]
    if len(set(external_ids)) != len(external_ids):
        raise ValueError("write_documents: the same external_id twice in one write (write them one by one)")
    statuses: list[str] = []
    with conn.transaction():
        lock_collection_writes(conn, collection)
        if bulk:
            conn.execute(load_sql("bulk_document"))
        stored = {external_id: (document_id, digest, source) for external_id, document_id, digest, source
                  in conn.execute(load_sql("lock_documents"), [collection.id, external_ids])}
        new: list[DocumentRows] = []
        for document in documents:
            old = stored.get(document.record.external_id)
            if old is not None and old[1] == document.record.content_hash:
                statuses.append("unchanged")
                continue
            statuses.append("replaced" if old is not None else "added")
            if old is not None:
                document = replace(document, record=kept_source(document.record, old[2]))
            new.append(document)
        replaced = [stored[d.record.external_id][0] for d in new if d.record.external_id in stored]
        if replaced:
            conn.execute(load_sql("delete_documents_by_id"), [replaced])
        if new:
            document_ids = _insert_documents(conn, collection, new)
            _copy_sections(conn, document_ids, new)
            _copy_sentences(conn, collection, document_ids, new)
    return statuses


def lock_collection_writes(conn: psycopg.Connection, collection: Collection) -> None:
    """The locking rule (sql/lock_collection_writes.sql), inside the caller's transaction."""
    if conn.execute(load_sql("lock_collection_writes"), [collection.id]).fetchone() is None:
        # the id this writer read is gone: the collection was deleted, or re-embedded into a new one
        raise CollectionError(f"collection {collection.name!r} was deleted or re-embedded (`windowrag reembed`) since "
                              "this ingest opened it: nothing of this document was written; run the ingest again")


def stored_content(conn: psycopg.Connection, collection: Collection, external_id: str) -> tuple | None:
    """(content_hash, text, format, title, metadata, source, units, sections) of the stored
    document, or None: units as [start, end, kind, section ordinal, page], sections as [start,
    end, heading path, level] lists, in order."""
    return conn.execute(load_sql("document_content"), [collection.id, external_id]).fetchone()


def update_metadata(conn: psycopg.Connection, collection: Collection, record: DocumentRecord, *,
                    expected_hash: str) -> bool:
    """Store RECORD's metadata (and hash, source) on the stored document, whose sections and
    sentences stay as they are; False when it changed since EXPECTED_HASH was read."""
    with conn.transaction():
        lock_collection_writes(conn, collection)
        stored = conn.execute(load_sql("lock_documents"), [collection.id, [record.external_id]]).fetchone()
        if stored is None:
            return False
        _, document_id, stored_hash, stored_source = stored
        if stored_hash != expected_hash:
            return False
        conn.execute(load_sql("update_document_metadata"), {
            "id": document_id, "metadata": Jsonb(record.metadata), "content_hash": record.content_hash,
            "source": kept_source(record, stored_source).source})
    return True


def kept_source(record: DocumentRecord, stored_source: str | None) -> DocumentRecord:
    """RECORD, with the stored version's source when it names none: a framework document that
    does not say where it was read from (a LlamaIndex Document with only metadata file_name,
    under the id its file's ingest gave it) erased the file's path, and source= found it no more."""
    return replace(record, source=stored_source) if record.source is None else record


def delete_document(conn: psycopg.Connection, collection: Collection, external_id: str) -> bool:
    check_role_may(conn, "may_delete_documents", action="delete documents of", collection=collection.name,
                   needs=WRITER_OR_OWNER)
    with conn.transaction():
        lock_collection_writes(conn, collection)
        row = conn.execute(load_sql("delete_document"), [collection.id, external_id]).fetchone()
    return row is not None


def _insert_documents(conn: psycopg.Connection, collection: Collection, documents: list[DocumentRows]) -> list[int]:
    """The documents' rows in one statement; their new ids, in the documents' order."""
    rows = conn.execute(load_sql("insert_documents"), {
        "collection_id": collection.id,
        "external_ids": [d.record.external_id for d in documents],
        "titles": [d.record.title for d in documents],
        "sources": [d.record.source for d in documents],
        "formats": [d.record.format for d in documents],
        "metadata": [Jsonb(d.record.metadata) for d in documents],
        "content_hashes": [d.record.content_hash for d in documents],
        "texts": [d.parsed.text for d in documents],
        "sentence_counts": [len(d.units) for d in documents],
    }).fetchall()
    ids = {external_id: document_id for document_id, external_id in rows}
    return [ids[d.record.external_id] for d in documents]


def _copy_sections(conn: psycopg.Connection, document_ids: list[int], documents: list[DocumentRows]) -> None:
    conn.execute(load_sql("stage_sections"))
    with conn.cursor().copy(load_sql("copy_stage_sections")) as copy:
        for document_id, document in zip(document_ids, documents):
            first: dict[int, int] = {}
            last: dict[int, int] = {}
            for ordinal, unit in enumerate(document.units):
                first.setdefault(unit.section_ordinal, ordinal)
                last[unit.section_ordinal] = ordinal
            for section in document.parsed.sections:
                copy.write_row((
                    document_id, section.ordinal, list(section.heading_path), section.level, section.start_char,
                    section.end_char, first.get(section.ordinal), last.get(section.ordinal),
                ))
    conn.execute(load_sql("insert_staged_sections"))


def _copy_sentences(conn: psycopg.Connection, collection: Collection, document_ids: list[int],
                    documents: list[DocumentRows]) -> None:
    conn.execute(load_sql("stage_sentences"))
    with conn.cursor().copy(load_sql("copy_stage")) as copy:
        copy.set_types(["int8", "int4", "int4", "int4", "int4", "text", "text", "text", "int4", "int4", "vector"])
        for document_id, document in zip(document_ids, documents):
            gaps = unit_gaps(document.parsed.text, document.units)
            for ordinal, (unit, gap, vector, tokens) in enumerate(
                    zip(document.units, gaps, document.embeddings, document.token_counts)):
                copy.write_row((
                    document_id, ordinal, unit.section_ordinal, unit.start_char, unit.end_char, unit.kind, unit.text,
                    gap, tokens, unit.page, vector,
                ))
    conn.execute(load_sql("insert_staged_sentences"),
                 {"collection_id": collection.id, "ts_config": collection.ts_config})
