"""LangChain: a BaseRetriever over windowrag-pg, and ingestion of LangChain Documents.

    pip install "windowrag-pg[langchain]"

    retriever = WindowragRetriever(collection="docs", k=5)      # + any windowrag_pg.search option
    chain = retriever | RunnableLambda(format_docs) | prompt | llm

Each retrieved context (a merged, cited sentence window) is one Document whose metadata holds
document_id, title, section_path, start_char, end_char and score.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, field_serializer

from ..assemble.context import AssembledContext
from ..ingest import IngestReport
from ..sources import SourceDocument, SourceError
from .common import (
    WindowragSearch, context_id, context_metadata, framework_documents, ingest_sources, source_document,
)


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

    @field_serializer("windowrag")
    def _shown_settings(self, search: WindowragSearch) -> dict[str, Any]:
        return search.settings()  # model_dump showed the URLs' passwords

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
    itself). The document id is doc.id, else metadata 'source'; documents without an id that
    share a source (a PDF loader's pages, a splitter's chunks) are told apart by their order
    among those: SOURCE, SOURCE#1, SOURCE#2, ... (one id for all of them made each replace the
    last). Errors are reported per document, as Ingestor does."""
    documents = framework_documents(documents, Document, "LangChain Documents")
    return ingest_sources(_sources(documents, format), connection=connection, collection=collection,
                          **ingestor_options)


def _sources(documents: Iterable[Document], format: str | None) -> Iterator[SourceDocument | SourceError]:
    seen: Counter[str] = Counter()
    for number, doc in enumerate(documents, start=1):
        external_id = doc.id
        if not external_id:
            source = str(doc.metadata.get("source") or "")
            if not source:
                yield SourceError(f"document {number}", "has neither an id nor metadata 'source' to name it by")
                continue
            external_id = source if not seen[source] else f"{source}#{seen[source]}"
            seen[source] += 1
        yield source_document(external_id=external_id, text=doc.page_content, metadata=doc.metadata, format=format)
