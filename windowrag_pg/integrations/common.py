"""What the LlamaIndex and LangChain retrievers share: their options, the search they run and
the metadata they attach. Framework-free, so each adapter is only the framework's wrapping.
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from ..assemble.context import AssembledContext
from ..async_pipeline import AsyncPipeline
from ..db.source import is_async
from ..db.connection import connect, redact_passwords
from ..ingest import Ingestor, IngestReport
from ..pipeline import Pipeline, search_options
from ..retrieve.filters import compile_filters
from ..store.collections import check_collection_name
from ..sources import SourceDocument, SourceError

# the metadata every retrieved node / document carries (the values of windowrag_pg.search)
METADATA_KEYS = ("document_id", "title", "section_path", "start_char", "end_char", "score")
# and these when the context starts inside a list or table (its lead-in or header, sent in front)
LEAD_METADATA_KEYS = ("lead_start_char", "lead_end_char")
FORMATS_BY_SUFFIX = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html"}


def check_search_options(options: dict[str, Any]) -> dict[str, Any]:
    """The keyword options of windowrag_pg.search, checked now (a typo fails at construction,
    not at the first query): unknown names and bad values raise QueryError."""
    search_options(options)
    return dict(options)


def context_metadata(context: AssembledContext) -> dict[str, Any]:
    c = context.citation
    lead = dict(zip(LEAD_METADATA_KEYS, (c.lead_start_char, c.lead_end_char))) if c.lead_start_char is not None else {}
    return {"document_id": c.document_id, "title": c.title, "section_path": list(c.section_path),
            "start_char": c.start_char, "end_char": c.end_char, "score": context.score, **lead}


def context_id(context: AssembledContext) -> str:
    """A stable id for a context: the same span of the same document gets the same id."""
    c = context.citation
    return f"{c.document_id}:{c.start_char}-{c.end_char}"


def source_document(*, external_id: str, text: str, metadata: dict[str, Any] | None,
                    format: str | None = None) -> SourceDocument:
    """A framework document as a SourceDocument: title from metadata 'title' (else, for plain
    text, the file name), the format from FORMAT, else the file name's suffix, else plain text."""
    metadata = dict(metadata or {})
    file_name = metadata.get("file_name") or metadata.get("source") or metadata.get("file_path")
    if format is None:
        suffix = PurePath(str(file_name)).suffix.lower() if file_name else ""
        format = FORMATS_BY_SUFFIX.get(suffix, "text")
    # as a file's ingest titles it: Markdown and HTML by their first heading (the parser's), text
    # by the file name
    title = metadata.get("title") or (PurePath(str(file_name)).stem if file_name and format == "text" else None)
    source = metadata.get("file_path") or metadata.get("source")
    return SourceDocument(external_id=external_id, format=format, title=title, text=text,
                          source=str(source) if source is not None else None, metadata=metadata)


def framework_documents(documents: Any, document_type: type | tuple[type, ...], label: str) -> Iterator[Any]:
    """DOCUMENTS (a list of DOCUMENT_TYPE, called LABEL in errors) one by one. One document or a
    string given on its own is refused now, before anything is connected to (iterated, a Document
    gave its fields as tuples: AttributeError 'tuple' object has no attribute 'id'); an item of
    another type is refused when it is reached, as Ingestor.ingest refuses one."""
    if isinstance(documents, (str, bytes, document_type)):
        raise TypeError(f"ingest_documents takes a list of {label}, not one {type(documents).__name__}: "
                        "ingest_documents([document])")
    return _checked_documents(documents, document_type, label)


def _checked_documents(documents: Iterable[Any], document_type: type | tuple[type, ...],
                       label: str) -> Iterator[Any]:
    for number, document in enumerate(documents, start=1):
        if not isinstance(document, document_type):
            raise TypeError(f"ingest_documents takes {label}; item {number} is a {type(document).__name__} "
                            f"({document!r:.80})")
        yield document


def ingest_sources(sources: Iterable[SourceDocument | SourceError], *, connection: Any, collection: str,
                   **ingestor_options: Any) -> IngestReport:
    """Ingest into the primary: CONNECTION is a Connection or ConnectionPool, else a URL (None:
    $WINDOWRAG_DATABASE_URL, else the embedded server) connected for this call only."""
    if connection is None or isinstance(connection, str):
        with connect(connection, autocommit=True) as conn:
            return Ingestor(conn, collection=collection, **ingestor_options).ingest(sources)
    return Ingestor(connection, collection=collection, **ingestor_options).ingest(sources)


@dataclass(slots=True)
class WindowragSearch:
    """One configured search: collection, options and where to connect.

    CONNECTION: a psycopg Connection or psycopg_pool ConnectionPool, or an AsyncConnection /
    AsyncConnectionPool (then only the async calls: aretrieve, ainvoke). Without one, windowrag_pg.search / asearch connect
    as they do (URL, READ_URL, $WINDOWRAG_DATABASE_URL, $WINDOWRAG_READ_DATABASE_URL, else the
    embedded server), sharing their process-wide pipelines.
    """

    collection: str = "default"
    connection: Any = None
    url: str | None = None
    read_url: str | None = None
    filters: dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    _pipeline: Any = None
    _async_pipeline: Any = None

    def __post_init__(self) -> None:
        if self.connection is not None and (self.url or self.read_url):
            raise ValueError("pass a connection (or pool), or url / read_url, not both")
        self.options = check_search_options(self.options or {})
        if self.filters is not None:
            compile_filters(self.filters)  # pure: a misspelt key or bad condition fails now, not at the first query
        check_collection_name(self.collection)

    def settings(self) -> dict[str, Any]:
        """What reprs and serialised forms show (LangChain's dumpd, a trace): the URLs with their
        passwords as *** (they were shown whole), not the pipelines built on first use."""
        return {"collection": self.collection, "connection": self.connection,
                "url": redact_passwords(self.url) if self.url else self.url,
                "read_url": redact_passwords(self.read_url) if self.read_url else self.read_url,
                "filters": self.filters, "options": self.options}

    def __repr__(self) -> str:
        return f"WindowragSearch({', '.join(f'{name}={value!r}' for name, value in self.settings().items())})"

    def search(self, query: str) -> list[AssembledContext]:
        import windowrag_pg

        if self.connection is None:
            return windowrag_pg.search(query, collection=self.collection, url=self.url, read_url=self.read_url,
                                       filters=self.filters, **self.options).contexts
        if self._pipeline is None:
            self._pipeline = Pipeline(self.connection, collection=self.collection)
        return self._pipeline.search(query, filters=self.filters, **self.options).contexts

    async def asearch(self, query: str) -> list[AssembledContext]:
        import windowrag_pg

        if self.connection is None:
            return (await windowrag_pg.asearch(query, collection=self.collection, url=self.url,
                                               read_url=self.read_url, filters=self.filters, **self.options)).contexts
        if not is_async(self.connection):  # a synchronous connection or pool: in a worker thread
            return await asyncio.to_thread(self.search, query)
        if self._async_pipeline is None:
            self._async_pipeline = AsyncPipeline(self.connection, collection=self.collection)
        return (await self._async_pipeline.search(query, filters=self.filters, **self.options)).contexts
