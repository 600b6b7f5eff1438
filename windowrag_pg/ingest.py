"""Ingestion: source → parse → split → embed → store, one document per transaction.

Two paths with the same rows: incremental (each document goes into the collection's HNSW index and
its BM25 statistics as it is written; the postings are packed into blocks once enough piled up) and
bulk (the index is dropped, the documents are written a batch a transaction, with the BM25
triggers deferred; at the end the BM25 statistics are counted and packed set-based and the index
is built once: several times faster on a large load). A bulk load also parses and splits the next
documents in a thread while the server writes the current ones.

Orchestration only: each stage is a pure function elsewhere (parse, split, embed), and the
database is touched through windowrag_pg.store.writer.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import Any

import psycopg

from .db.source import SingleConnection, connection_source
from .db.sqlfiles import load_sql
from .embed import embedder_of_collection, get_embedder
from .embed.base import Embedder, EmbeddingError
from .embed.headers import embedding_text
from .parse import ParseError, check_document_size, parse_docx, parse_document, parse_pdf
from .parse.types import ParsedDocument, Unit
from .sources import SourceCheckError, SourceDocument, SourceError, check_source
from .split.sentences import split_units
from .store.collections import (
    Collection, CollectionError, build_collection_index, centre_if_due, collection_index_state, collection_has_sentences,
    drop_collection_index, ensure_collection, ensure_collection_index, get_collection,
)
from .store.bm25 import pack_if_due, rebuild_bm25
from .store.writer import (
    DocumentRecord, DocumentRows, existing_hash, stored_content, update_metadata, write_documents,
)

# The automatic choice (Ingestor(bulk=None)): a bulk load when an ingest brings more than this many
# inputs into a collection that holds no sentences or has no valid HNSW index (a bulk load that was
# interrupted); otherwise incremental.
BULK_MIN_DOCUMENTS = 10
# A bulk load parses and splits up to this many documents ahead of the one being written, in one
# thread: pure Python (it holds the GIL) that overlaps the server's INSERT of the rows before it
# (the client waits on the socket without the GIL). With embedding excluded, parsing and
# splitting were ~6 s of a 100k-sentence load's ~26 s write phase (docs/performance.md).
PARSE_AHEAD = 8


@dataclass(slots=True)
class IngestReport:
    added: int = 0
    replaced: int = 0
    metadata_updated: int = 0  # same text, new metadata: updated in place, nothing re-embedded
    unchanged: int = 0
    sections: int = 0
    sentences: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    bulk: bool = False  # written without the HNSW index, which was built once at the end
    index_seconds: float = 0.0  # the index build of a bulk load, or an incremental one's centring (in seconds too)
    errors: list[SourceError] = field(default_factory=list)
    # documents stored with a loss the parser reported (a PDF page that could not be read)
    warnings: list[SourceError] = field(default_factory=list)
    interrupted: bool = False  # should_stop() turned true: the documents counted are stored, no others

    @property
    def documents(self) -> int:
        return self.added + self.replaced + self.metadata_updated + self.unchanged

    @property
    def sentences_per_second(self) -> float:
        return self.sentences / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict:
        return {
            "documents": self.documents, "added": self.added, "replaced": self.replaced,
            "metadata_updated": self.metadata_updated, "unchanged": self.unchanged, "sections": self.sections, "sentences": self.sentences,
            "seconds": round(self.seconds, 3), "embed_seconds": round(self.embed_seconds, 3),
            "bulk": self.bulk, "index_seconds": round(self.index_seconds, 3),
            "sentences_per_second": round(self.sentences_per_second, 1),
            "errors": [{"name": e.name, "message": e.message} for e in self.errors],
            "warnings": [{"name": w.name, "message": w.message} for w in self.warnings],
            "interrupted": self.interrupted,
        }


# Bump when a change to parse/ or split/ may cut the same text into other units or sections. A
# document stored under another version (or another unit setting) is parsed again on its next
# ingest, and rewritten only when its units or sections came out different.
# 2: raw HTML in Markdown, "Dr."/"v.", wrapped plain text; 3: PDF page furniture, page breaks,
# hyphenation, ligatures, outline sections; HTML pages read from their <main>; 4: a raw HTML
# table row in Markdown is one unit, a Markdown page's front matter title is its title, HTML and
# DOCX list items are written with their markers, DOCX insertions, content controls and nested
# tables are read, an HTML page laid out in a table is read as its blocks, Sphinx permalinks are
# dropped, "**Q." stays with its question, a danda ends a sentence; 5: wrapped plain text
# with hanging indents (man pages) is read as wrapped, a short line there ends its block.
UNITS_VERSION = 5


def content_hash(source: SourceDocument, *, units: Any = None) -> str:
    """Hash of everything that shapes the stored rows of a document: the source, and how it was
    cut into units (UNITS_VERSION and the ingest's UNITS setting)."""
    digest = hashlib.sha256()
    header = {"format": source.format, "title": source.title, "metadata": source.metadata,
              "units": [UNITS_VERSION, units]}
    digest.update(json.dumps(header, sort_keys=True, ensure_ascii=False, default=str).encode())
    digest.update(b"\0")
    digest.update(source.data if source.data is not None else (source.text or "").encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def parse_source(source: SourceDocument) -> ParsedDocument:
    if source.format in ("pdf", "docx"):
        parsed = (parse_pdf if source.format == "pdf" else parse_docx)(source.data or b"")
        # the limit holds for the text a PDF or DOCX expands to, not only for its file (found by
        # a tester: 1.5 MB of DOCX gave 29 MB of text, 555,550 sentences to embed)
        check_document_size(len(parsed.text.encode("utf-8", "surrogatepass")), f"its text ({source.format})")
        if parsed.title is None and source.origin:  # no title of its own: its file's name
            parsed.title = Path(source.origin).stem
        return parsed
    return parse_document(source.text or "", source.format, title=source.title)


def embedding_texts(parsed: ParsedDocument, units: list[Unit], *, title: str | None, contextual_headers: bool) -> list[str]:
    """What is embedded for each unit: the unit alone, or "title › section path: unit" (embed/headers.py)."""
    if not contextual_headers:
        return [unit.text for unit in units]
    return [embedding_text(unit.text, title=title, heading_path=parsed.sections[unit.section_ordinal].heading_path)
            for unit in units]


def _collection_embedder(conn: psycopg.Connection, name: str) -> Embedder:
    """The model an existing collection was embedded with (its model_id read back), else the default."""
    try:
        model_id = get_collection(conn, name).embedding_model
    except CollectionError:  # a new collection (or a bad name, which ensure_collection reports)
        return get_embedder()
    return embedder_of_collection(name, model_id, error=CollectionError, owner="Ingestor")


class Ingestor:
    """Ingest documents into one collection, each document in its own transaction: over a
    connection (autocommit or not: the Ingestor commits its own transactions, so the connection
    must not hold uncommitted work of the caller's), a psycopg_pool ConnectionPool (a connection
    is checked out per statement, never while the model embeds) or a URL. Always the primary: a
    replica is read-only.

    bulk: None (default) chooses per ingest() call: a bulk load when more than BULK_MIN_DOCUMENTS
    inputs go into a collection with no sentences (or with no valid HNSW index: an interrupted bulk
    load); True always loads in bulk, also into a populated collection, whose index is then dropped
    and rebuilt (its searches are exact sequential scans meanwhile, correct but slower); False never.
    A bulk load needs the role that owns windowrag.sentences (a tenant role ingests incrementally).

    contextual_headers: whether each sentence is embedded as "title › section path: sentence"
    (embed/headers.py), a collection setting fixed at creation. None (default): the collection's
    own setting, and True for a new collection; True or False must match an existing collection's.
    """

    def __init__(
        self,
        conn: psycopg.Connection | Any,
        *,
        collection: str = "default",
        embedder: Embedder | None = None,
        contextual_headers: bool | None = None,
        max_unit_chars: int = 2000,
        chunk_tokens: int | None = None,
        tenant: str | None = None,
        bulk: bool | None = None,
        vector_index: str | None = None,
    ) -> None:
        if bulk not in (None, True, False):
            raise ValueError(f"Ingestor: bulk must be None, True or False, not {bulk!r}")
        self.bulk = bulk
        self._index_ready = False  # the collection's index is known to be valid
        self.source = connection_source(conn)
        self._last_conn: psycopg.Connection | None = None  # the server is gone when it broke
        if (isinstance(self.source, SingleConnection)
                and self.source.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE):
            raise ValueError(
                "Ingestor: the connection has a transaction in progress; commit or roll it back first "
                "(each document commits on its own)")
        self.max_unit_chars = max_unit_chars
        # chunk_tokens set: the naive baseline of the evaluation (fixed-size token chunks are the
        # retrieval unit instead of sentences), stored in the same tables.
        self.chunk_tokens = chunk_tokens
        with self._connection() as conn:
            self.embedder = embedder or _collection_embedder(conn, collection)
            self.collection: Collection = ensure_collection(
                conn, collection, embedding_model=self.embedder.model_id,
                dimension=self.embedder.dimension, contextual_headers=contextual_headers,
                unit="chunk" if chunk_tokens else "sentence", chunk_tokens=chunk_tokens, tenant=tenant,
                index=False, vector_index=vector_index,
            )
            if not conn.execute(load_sql("may_write_documents")).fetchone()[0]:
                # (a reader role's every document was refused with "permission denied for table ...")
                raise CollectionError(
                    f"role {conn.info.user!r} may not write documents into {collection!r}: ingest with the schema's "
                    "owner or a windowrag_writer role (docs/tenancy.md)")
            # An empty collection gets its index now, as before (an owner who only creates the
            # collection leaves it ready for tenant roles); a populated one without a valid index
            # (an interrupted bulk load) is left to ingest(): built after a bulk load, before an
            # incremental one.
            if bulk is False or not collection_has_sentences(conn, self.collection):
                ensure_collection_index(conn, self.collection)
                self._index_ready = True

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        """A connection in autocommit mode (each document commits on its own), as it was after."""
        with self.source.connection() as conn:
            self._last_conn = conn
            if conn.autocommit:
                yield conn
                return
            conn.autocommit = True  # a pooled connection, idle when lent, or the caller's idle one
            try:
                yield conn
            finally:
                if not conn.closed:
                    conn.autocommit = False

    def ingest(
        self,
        sources: Iterable[SourceDocument | SourceError],
        *,
        on_document: Callable[[str, str, int], None] | None = None,
        on_units: Callable[[int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        batch_units: int = 2048,
    ) -> IngestReport:
        """Ingest every source; errors are collected, never raised. on_document(name, status, units);
        on_units(n) after each batch of n sentences embedded (progress within long documents).

        should_stop() is asked between documents and between embedding batches; once it is true
        the ingest ends with report.interrupted: every document counted was committed whole, the
        ones being embedded are dropped (none is half-written: each commits in one transaction).

        Small documents are embedded together, BATCH_UNITS sentences at a time (full batches,
        duplicates embedded once across documents); each document still commits on its own.
        """
        report = IngestReport()
        started = time.perf_counter()
        pending: list[_Prepared] = []
        sources = _checked(sources)
        head = list(islice(sources, BULK_MIN_DOCUMENTS + 1)) if self.bulk is None else []
        sources = chain(head, sources)
        report.bulk = self._begin(inputs=len(head))

        def check_stop() -> None:
            if should_stop is not None and should_stop():
                raise _Stopped

        def units_embedded(count: int) -> None:
            if on_units:
                on_units(count)
            check_stop()

        def fail(name: str, exc: Exception) -> None:
            if self._last_conn is not None and (self._last_conn.closed or self._last_conn.broken):
                raise exc  # the server is gone: every further document would fail the same way
            report.errors.append(SourceError(name, _describe(exc)))
            if on_document:
                on_document(name, "error", 0)

        def flush() -> None:
            for prepared, outcome in self._embed_and_write(pending, report, on_units=units_embedded):
                if isinstance(outcome, Exception):
                    fail(prepared.source.name, outcome)
                    continue
                status, sections, units = outcome
                setattr(report, status, getattr(report, status) + 1)
                if status != "unchanged":  # another writer may have stored the same content meanwhile
                    report.sections += sections
                    report.sentences += units
                    report.warnings.extend(SourceError(prepared.source.name, w) for w in prepared.parsed.warnings)
                if on_document:
                    on_document(prepared.source.external_id, status, units)
                if not report.bulk:
                    check_stop()  # between two committed documents
            pending.clear()
            check_stop()  # a bulk load commits the batch at once: every document of it is counted first

        parser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="windowrag-parse") if report.bulk else None
        try:
            for source, ahead in self._parse_ahead(sources, parser):
                check_stop()
                if isinstance(source, SourceError):
                    report.errors.append(source)
                    if on_document:
                        on_document(source.name, "error", 0)
                    continue
                try:
                    prepared = self.prepare(source, ahead=ahead)
                except INGEST_ERRORS as exc:
                    fail(source.name, exc)
                    continue
                if isinstance(prepared, str):  # "unchanged" or "metadata_updated": nothing to embed
                    setattr(report, prepared, getattr(report, prepared) + 1)
                    if on_document:
                        on_document(source.external_id, prepared, 0)
                    continue
                pending.append(prepared)
                if sum(len(p.units) for p in pending) >= batch_units:
                    flush()
            flush()
        except _Stopped:
            report.interrupted = True
        finally:
            if parser is not None:
                parser.shutdown(wait=True, cancel_futures=True)  # at most the one running parse is waited for
        if report.bulk:
            self._build_index(report)
        elif report.sentences or report.replaced:
            self._maintain(report)
        report.seconds = time.perf_counter() - started
        return report

    def _begin(self, *, inputs: int) -> bool:
        """Choose the path of this ingest (True: bulk) and prepare the collection's index for it:
        dropped for a bulk load, built (or repaired) before an incremental one."""
        with self._connection() as conn:
            bulk = self.bulk
            if bulk is None:
                bulk = (inputs > BULK_MIN_DOCUMENTS and self._may_index(conn)
                        and (not collection_has_sentences(conn, self.collection)
                             or collection_index_state(conn, self.collection) != "valid"))
            if not bulk:
                if not self._index_ready:
                    ensure_collection_index(conn, self.collection)
                    self._index_ready = True
                return False
            if not self._may_index(conn):
                raise CollectionError(
                    f"a bulk load drops and rebuilds the HNSW index of collection {self.collection.name!r}, "
                    "which only the owner of windowrag.sentences may do: ingest without bulk (--no-bulk)")
            drop_collection_index(conn, self.collection)
            self._index_ready = False
            return True

    @staticmethod
    def _may_index(conn: psycopg.Connection) -> bool:
        return bool(conn.execute(load_sql("may_index_sentences")).fetchone()[0])

    def _build_index(self, report: IngestReport) -> None:
        """The end of a bulk load: build the collection's HNSW index once. A failure is reported
        (every document counted is stored); the next ingest or `windowrag doctor --fix` builds it."""
        started = time.perf_counter()
        try:
            with self._connection() as conn:
                if not build_collection_index(conn, self.collection):
                    # another writer built the index meanwhile (without this load's deferred BM25
                    # statistics): they are counted all the same
                    rebuild_bm25(conn, self.collection)
            self._index_ready = True
        except psycopg.Error as exc:
            if self._last_conn is not None and (self._last_conn.closed or self._last_conn.broken):
                raise
            report.errors.append(SourceError(
                f"HNSW index of collection {self.collection.name!r}",
                f"not built: {_describe(exc).removeprefix('database refused the document: ')}; the documents are stored: the next ingest or `windowrag doctor --fix` builds it"))
        report.index_seconds = time.perf_counter() - started

    def _maintain(self, report: IngestReport) -> None:
        """After an incremental ingest, the owner's upkeep: pack the collection's BM25 postings when
        the rows written since the last pack are a sizeable share (store/bm25.py), then centre its
        HNSW index on its rows when it has grown past CENTRE_AT_SENTENCES without one
        (store/collections.centre_if_due; its seconds go to report.index_seconds). Other roles
        skip both; a failure is reported, the documents are stored and searchable either way."""
        self._upkeep(report, pack_if_due, f"BM25 postings of collection {self.collection.name!r}", "not packed")
        started = time.perf_counter()
        if self._upkeep(report, centre_if_due, f"HNSW index of collection {self.collection.name!r}",
                        "not centred on its rows"):
            report.index_seconds = time.perf_counter() - started

    def _upkeep(self, report: IngestReport, action, what: str, failed: str) -> bool:
        """ACTION(conn, collection) as the owner; whether it did something (False for other roles
        and on a reported failure)."""
        try:
            with self._connection() as conn:
                return self._may_index(conn) and action(conn, self.collection)
        except CollectionError as exc:  # deleted or re-embedded meanwhile
            report.errors.append(SourceError(what, f"{failed}: {exc}"))
            return False
        except psycopg.Error as exc:
            if self._last_conn is not None and (self._last_conn.closed or self._last_conn.broken):
                raise
            report.errors.append(SourceError(
                what, f"{failed}: {_describe(exc).removeprefix('database refused the document: ')}; "
                "the documents are stored and searchable"))
            return False

    def make_units(self, parsed: ParsedDocument) -> list[Unit]:
        if self.chunk_tokens:
            from .split.chunks import chunk_units

            return chunk_units(parsed, max_tokens=self.chunk_tokens, token_offsets=self.embedder.token_offsets)
        return split_units(parsed, max_unit_chars=self.max_unit_chars)

    def prepare(self, source: SourceDocument, *, ahead: Future | None = None) -> _Prepared | str:
        """Check, hash, parse and split one document to embed it; "unchanged" when it is stored
        as it is, "metadata_updated" when only its metadata (or source) changed: that is stored
        here, its sentences and embeddings stay. AHEAD: parse_and_split(source) already running
        in a thread (a bulk load); its result, or its error, is taken at the same step."""
        check_source(source)  # fields Postgres cannot store, metadata that is not plain JSON
        digest = content_hash(source, units=[self.max_unit_chars, self.chunk_tokens])
        with self._connection() as conn:
            stored = existing_hash(conn, self.collection, source.external_id)
        if stored == digest:
            return "unchanged"
        parsed, units = ahead.result() if ahead is not None else self.parse_and_split(source)
        if stored is not None:
            status = self._update_in_place(source, digest, parsed, units)
            if status is not None:
                return status
        if not units:
            raise ParseError("no text to index (no sentence found)")
        texts = embedding_texts(parsed, units, title=source.title or parsed.title,
                                contextual_headers=self.collection.contextual_headers)
        return _Prepared(source, digest, parsed, units, texts)

    def parse_and_split(self, source: SourceDocument) -> tuple[ParsedDocument, list[Unit]]:
        """The pure part of prepare(): no database, safe in a thread."""
        parsed = parse_source(source)
        return parsed, self.make_units(parsed)

    def _parse_ahead(self, sources: Iterator, parser: ThreadPoolExecutor | None) -> Iterator[tuple[Any, Future | None]]:
        """Each source with its parse_and_split already submitted to PARSER (None: no look-ahead),
        up to PARSE_AHEAD documents ahead of the one yielded. The sources are read in this thread,
        in order; a parse error is raised where the document is prepared, as without look-ahead."""
        if parser is None:
            yield from ((source, None) for source in sources)
            return
        queue: deque[tuple[Any, Future | None]] = deque()
        for source in sources:
            queue.append((source, parser.submit(self.parse_and_split, source)
                          if isinstance(source, SourceDocument) else None))
            if len(queue) > PARSE_AHEAD:
                yield queue.popleft()
        yield from queue

    def _update_in_place(self, source: SourceDocument, digest: str, parsed: ParsedDocument,
                              units: list[Unit]) -> str | None:
        """When the stored document has the same text, format, title, units and sections, store the
        new metadata and hash on it: "metadata_updated", or "unchanged" when only the hash was
        out of date (another units version); None when it must be written again."""
        with self._connection() as conn:
            stored = stored_content(conn, self.collection, source.external_id)
            if stored is None:
                return None
            stored_hash, text, format_, title, metadata, source_name, stored_units, stored_sections = stored
            if (text, format_, title) != (parsed.text, source.format, source.title or parsed.title):
                return None
            if (stored_units or []) != [[u.start_char, u.end_char, u.kind, u.section_ordinal, u.page] for u in units] or \
                    (stored_sections or []) != [[s.start_char, s.end_char, list(s.heading_path), s.level]
                                                for s in parsed.sections]:
                return None  # the same text cut otherwise (a newer parser, another unit setting)
            if not update_metadata(conn, self.collection, self._record(source, parsed, digest), expected_hash=stored_hash):
                # changed meanwhile: by another ingest of this same version (nothing to do), or not
                return "unchanged" if existing_hash(conn, self.collection, source.external_id) == digest else None
            kept = source_name if source.source is None else source.source  # (update_metadata keeps it)
            return "unchanged" if (metadata, source_name) == (source.metadata, kept) else "metadata_updated"

    def _record(self, source: SourceDocument, parsed: ParsedDocument, digest: str) -> DocumentRecord:
        return DocumentRecord(external_id=source.external_id, title=source.title or parsed.title, source=source.source,
                              format=source.format, metadata=source.metadata, content_hash=digest)

    def _embed_and_write(self, batch: list[_Prepared], report: IngestReport, *,
                         on_units: Callable[[int], None] | None = None):
        """Embed the batch in one call, then write it (_write)."""
        if not batch:
            return
        embed_started = time.perf_counter()
        try:
            vectors = self.embedder.embed_documents([t for p in batch for t in p.texts], progress=on_units)
        except INGEST_ERRORS:
            if len(batch) == 1:
                raise
            # one bad document must not fail the others: embed them one by one
            for prepared in batch:
                try:
                    yield from self._embed_and_write([prepared], report, on_units=on_units)
                except INGEST_ERRORS as exc:
                    yield prepared, exc
            return
        report.embed_seconds += time.perf_counter() - embed_started
        offset = 0
        ready: list[tuple[_Prepared, DocumentRows]] = []
        for prepared in batch:
            own = vectors[offset: offset + len(prepared.units)]
            offset += len(prepared.units)
            try:
                token_counts = self.embedder.count_tokens([u.text for u in prepared.units])
                ready.append((prepared, DocumentRows(self._record(prepared.source, prepared.parsed, prepared.digest),
                                                     prepared.parsed, prepared.units, own, token_counts)))
            except INGEST_ERRORS as exc:
                yield prepared, exc
        yield from self._write(ready, bulk=report.bulk)

    def _write(self, ready: list[tuple[_Prepared, DocumentRows]], *, bulk: bool):
        """Each document in its own transaction; a bulk load writes the batch in one, and when that
        fails, one by one (the failing document gets its own error, the others are written)."""
        if bulk and len(ready) > 1:
            try:
                with self._connection() as conn:
                    statuses = write_documents(conn, self.collection, [rows for _, rows in ready], bulk=True)
            except INGEST_ERRORS:
                pass  # written one by one below (a broken connection fails there, and stops the ingest)
            else:
                for (prepared, rows), status in zip(ready, statuses):
                    yield prepared, (status, len(rows.parsed.sections), len(rows.units))
                return
        for prepared, rows in ready:
            try:
                with self._connection() as conn:
                    [status] = write_documents(conn, self.collection, [rows], bulk=bulk)
            except INGEST_ERRORS as exc:
                yield prepared, exc
                continue
            yield prepared, (status, len(rows.parsed.sections), len(rows.units))


@dataclass(slots=True)
class _Prepared:
    source: SourceDocument
    digest: str
    parsed: ParsedDocument
    units: list[Unit]
    texts: list[str]


# What fails one document, not the batch: any exception of its own parse, split, embedding or
# statements — a database error (lock or statement timeout, unique violation, refused privilege,
# …) rolls back that document's transaction only. A broken connection still stops the batch
# (see fail()); KeyboardInterrupt and SystemExit are not Exceptions and stop it too.
INGEST_ERRORS = (Exception,)
EXPECTED_ERRORS = (ParseError, EmbeddingError, ValueError)  # their messages are written for users


class _Stopped(BaseException):
    """should_stop() turned true. A BaseException, like KeyboardInterrupt, so that no per-document
    handler (INGEST_ERRORS is every Exception) catches it on its way out."""


def _describe(exc: Exception) -> str:
    if isinstance(exc, psycopg.Error):
        diag = getattr(exc, "diag", None)
        primary = diag.message_primary if diag is not None and diag.message_primary else str(exc)
        return f"database refused the document: {primary}"
    if isinstance(exc, EXPECTED_ERRORS):
        return str(exc)
    return f"unexpected {type(exc).__name__}: {exc}"


def _checked(sources: Iterable[SourceDocument | SourceError]) -> Iterator[SourceDocument | SourceError]:
    """SOURCES, refusing what is neither (a list of paths raised AttributeError from deep inside),
    and a document whose id an earlier one of the same ingest has: it would replace that one
    silently (two files' records, two framework documents with one id). The same id with the same
    content (a file and a link to it) is the same document: passed over, not counted twice."""
    if isinstance(sources, (str, bytes)):
        raise TypeError("Ingestor.ingest takes SourceDocuments, not a path: windowrag_pg.iter_sources([path]) reads files")
    first: dict[str, tuple[str, str]] = {}  # external_id -> (name, content hash) of its first document
    for source in sources:
        if not isinstance(source, (SourceDocument, SourceError)):
            raise TypeError(f"Ingestor.ingest takes SourceDocuments, not {type(source).__name__} ({source!r:.80}): "
                            "windowrag_pg.iter_sources(paths) reads files and folders")
        if isinstance(source, SourceDocument):
            try:
                check_source(source)
            except SourceCheckError:
                yield source  # refused, with its message, where it is prepared
                continue
            digest = content_hash(source)
            earlier = first.get(source.external_id)
            if earlier is None:
                first[source.external_id] = (source.name, digest)
            elif earlier[1] == digest:
                continue  # the same document again
            else:
                source = SourceError(source.name, f"id {source.external_id!r} is already the id of {earlier[0]} in "
                                                  "this ingest, with other content: this document is not ingested")
        yield source
