"""windowrag-pg: sentence-window retrieval for RAG, natively in Postgres with pgvector."""
from __future__ import annotations

from typing import Any

from .assemble.context import AssembledContext, Citation, format_context
from .db.connection import DatabaseError, connect, database_url
from .ingest import Ingestor, IngestReport
from .pipeline import Pipeline, PipelineOptions, PipelineResult
from .retrieve.filters import FilterError
from .retrieve.retriever import Context, Hit, QueryError, Retriever, SearchResult
from .reembed import reembed_collection
from .sources import SourceDocument, iter_sources
from .store.collections import delete_collection

__all__ = [
    "AssembledContext", "Citation", "Context", "DatabaseError", "FilterError", "Hit", "IngestReport",
    "Ingestor", "Pipeline", "PipelineOptions", "PipelineResult", "QueryError", "Retriever", "SearchResult",
    "SourceDocument", "connect", "database_url", "delete_collection", "format_context", "iter_sources",
    "list_documents", "reembed_collection", "search",
]
__version__ = "0.1.0"

_pipelines: dict[tuple[str | None, str], Pipeline] = {}


def search(query: str, *, collection: str = "default", url: str | None = None,
           filters: dict[str, Any] | None = None, **options: Any) -> PipelineResult:
    """The whole chain in one call: retrieve → rerank → RSE → assemble (see PipelineOptions).

    search(query, k=5, window=3, mode="hybrid", rerank=True, rse="balanced" | None,
           token_budget=None, filters=None)
    Keeps one connection and pipeline per (url, collection) for the life of the process.
    """
    key = (url, collection)
    if key not in _pipelines:
        _pipelines[key] = Pipeline(connect(url, autocommit=True), collection=collection)
    return _pipelines[key].search(query, filters=filters, **options)


def list_documents(conn, *, collection: str = "default", filters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The documents of COLLECTION matching FILTERS (the search filter language), ordered by id:
    dicts of id, title, source, format, sentences, sections, metadata, updated_at."""
    from .store.collections import get_collection
    from .store.documents import list_documents as list_collection_documents

    return list_collection_documents(conn, get_collection(conn, collection), filters=filters)
