"""windowrag-pg: sentence-window retrieval for RAG, natively in Postgres with pgvector."""
from __future__ import annotations

from .db.connection import DatabaseError, connect, database_url
from .ingest import Ingestor, IngestReport
from .retrieve.filters import FilterError
from .retrieve.retriever import Context, Hit, QueryError, Retriever, SearchResult
from .sources import SourceDocument, iter_sources

__all__ = [
    "Context", "DatabaseError", "FilterError", "Hit", "IngestReport", "Ingestor", "QueryError",
    "Retriever", "SearchResult", "SourceDocument", "connect", "database_url", "iter_sources",
]
__version__ = "0.1.0"
