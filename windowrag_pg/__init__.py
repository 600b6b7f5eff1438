"""windowrag-pg: sentence-window retrieval for RAG, natively in Postgres with pgvector."""
from __future__ import annotations

import asyncio
import weakref
from typing import Any

from .assemble.context import AssembledContext, Citation, format_context
from .async_pipeline import AsyncPipeline
from .config import read_database_url_from_env
from .db.async_source import AsyncLazyConnection, async_read_source
from .db.connection import DatabaseError, connect, database_url
from .db.source import connection_source, read_source
from .ingest import Ingestor, IngestReport
from .pipeline import Pipeline, PipelineOptions, PipelineResult
from .retrieve.filters import FilterError
from .retrieve.retriever import Context, Hit, QueryError, Retriever, SearchResult
from .sources import SourceDocument, iter_sources

__all__ = [
    "AssembledContext", "AsyncPipeline", "Citation", "Context", "DatabaseError", "FilterError", "Hit", "IngestReport",
    "Ingestor", "Pipeline", "PipelineOptions", "PipelineResult", "QueryError", "Retriever", "SearchResult",
    "SourceDocument", "aclose", "asearch", "close", "connect", "database_url", "delete_collection", "format_context",
    "iter_sources", "list_documents", "reembed_collection", "search",
]
__version__ = "0.1.0"

_pipelines: dict[tuple[str | None, str | None, str], Pipeline] = {}
# asearch's connections, per event loop (an async connection belongs to the loop that opened it)
_async_pipelines: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def search(query: str, *, collection: str = "default", url: str | None = None, read_url: str | None = None,
           filters: dict[str, Any] | None = None, **options: Any) -> PipelineResult:
    """The whole chain in one call: retrieve → rerank → RSE → assemble (see PipelineOptions).

    search(query, k=5, window=3, mode="hybrid", rerank=True, rse="balanced" | None,
           token_budget=None, filters=None)
    URL: the primary (else $WINDOWRAG_DATABASE_URL, else the embedded server). READ_URL (else
    $WINDOWRAG_READ_DATABASE_URL): a streaming replica that answers the query instead.
    Keeps one connection and pipeline per (url, read_url, collection) for the life of the process;
    with a Connection or a psycopg_pool pool of your own, use Pipeline(conn_or_pool).
    """
    return _pipeline(collection, url, read_url).search(query, filters=filters, **options)


async def asearch(query: str, *, collection: str = "default", url: str | None = None, read_url: str | None = None,
                  filters: dict[str, Any] | None = None, **options: Any) -> PipelineResult:
    """`await asearch(...)`: search on an async connection, with the same arguments and results.

    Shares search's models; keeps one AsyncConnection per (url, read_url, collection) and event
    loop, on which concurrent calls take turns; for overlapping database waits give
    AsyncPipeline an AsyncConnectionPool.
    """
    pipeline = _pipeline(collection, url, read_url)
    per_loop = _async_pipelines.setdefault(asyncio.get_running_loop(), {})
    if pipeline not in per_loop:
        read_url = read_url or read_database_url_from_env()
        source = async_read_source(read_url) if read_url else AsyncLazyConnection(url)
        per_loop[pipeline] = AsyncPipeline(source, pipeline=pipeline)
    return await per_loop[pipeline].search(query, filters=filters, **options)


def close() -> None:
    """Close the connections search() keeps for the life of the process (a service's shutdown);
    a later search opens them again."""
    for pipeline in _pipelines.values():
        if hasattr(pipeline.source, "close"):
            pipeline.source.close()


async def aclose() -> None:
    """Close the connections asearch() keeps for the running event loop (before the loop ends: an
    AsyncConnection left open warns when it is collected)."""
    for pipeline in _async_pipelines.pop(asyncio.get_running_loop(), {}).values():
        if hasattr(pipeline.source, "close"):
            await pipeline.source.close()


def _pipeline(collection: str, url: str | None, read_url: str | None) -> Pipeline:
    read_url = read_url or read_database_url_from_env()
    key = (None if read_url else url, read_url, collection)
    if key not in _pipelines:
        source = read_source(read_url) if read_url else connection_source(url)
        _pipelines[key] = Pipeline(source, collection=collection)
    return _pipelines[key]


# The collection helpers take what Pipeline and Ingestor take: a connection, a psycopg_pool pool or
# a URL (None: $WINDOWRAG_DATABASE_URL, else the embedded server).

def list_documents(conn: Any = None, *, collection: str = "default",
                   filters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The documents of COLLECTION matching FILTERS (the search filter language), ordered by id:
    dicts of id, title, source, format, sentences, sections, metadata, updated_at."""
    from .store.collections import get_collection
    from .store.documents import list_documents as list_collection_documents

    with connection_source(conn).connection() as lent:
        return list_collection_documents(lent, get_collection(lent, collection), filters=filters)


def delete_collection(conn: Any, name: str) -> int:
    """Delete collection NAME with all its documents; returns how many documents it held."""
    from .store.collections import delete_collection as delete

    with connection_source(conn).connection() as lent:
        return delete(lent, name)


def reembed_collection(conn: Any, name: str, embedder: Any, *, on_units: Any = None) -> int:
    """Re-embed collection NAME with EMBEDDER (an Embedder, or a model name as `--embedder` takes),
    which becomes its model; returns the number of sentences (windowrag_pg.reembed)."""
    from .embed import get_embedder
    from .reembed import reembed_collection as reembed

    if isinstance(embedder, str):
        embedder = get_embedder(embedder)
    with connection_source(conn).connection() as lent:
        return reembed(lent, name, embedder, on_units=on_units)
