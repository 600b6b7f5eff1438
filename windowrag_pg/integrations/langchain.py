"""LangChain: a BaseRetriever over windowrag-pg, and ingestion of LangChain Documents.

    pip install "windowrag-pg[langchain]"

    retriever = WindowragRetriever(collection="docs", k=5)      # + any windowrag_pg.search option
    chain = retriever | RunnableLambda(format_docs) | prompt | llm

Each retrieved context (a merged, cited sentence window) is one Document whose metadata holds
document_id, title, section_path, start_char, end_char and score.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from ..assemble.context import AssembledContext
from ..ingest import IngestReport
from .common import WindowragSearch, context_id, context_metadata, ingest_sources, source_document


class WindowragRetriever(BaseRetriever):
    """WindowragRetriever(collection=, connection= | url= | read_url=, filters=, k=, window=,
    token_budget=, rerank=, rse=, …): the keyword options of windowrag_pg.search."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    windowrag: WindowragSearch

    def __init__(self, *, collection: str = "default", connection: Any = None, url: str | None = None,
                 read_url: str | None = None, filters: dict[str, Any] | None = None,
                 tags: list[str] | None = None, metadata: dict[str, Any] | None = None, **options: Any) -> None:
        search = WindowragSearch(collection=collection, connection=connection, url=url, read_url=read_url,
                                 filters=filters, options=options)
        super().__init__(windowrag=search, tags=tags, metadata=metadata)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [_document(c) for c in self.windowrag.search(query)]

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun) -> list[Document]:
        return [_document(c) for c in await self.windowrag.asearch(query)]


def _document(context: AssembledContext) -> Document:
    return Document(id=context_id(context), page_content=context.text, metadata=context_metadata(context))


def ingest_documents(documents: Iterable[Document], *, connection: Any = None, collection: str = "default",
                     format: str | None = None, **ingestor_options: Any) -> IngestReport:
    """Ingest LangChain Documents (whole documents: windowrag-pg splits them into sentences
    itself). The document id is doc.id, else metadata 'source'; errors are reported per
    document, as Ingestor does."""
    sources = (source_document(external_id=doc.id or str(doc.metadata.get("source") or ""), text=doc.page_content,
                               metadata=doc.metadata, format=format) for doc in documents)
    return ingest_sources(sources, connection=connection, collection=collection, **ingestor_options)
