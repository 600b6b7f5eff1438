"""LlamaIndex: a BaseRetriever over windowrag-pg, and ingestion of LlamaIndex Documents.

    pip install "windowrag-pg[llama-index]"

    retriever = WindowragRetriever(collection="docs", k=5)       # + any windowrag_pg.search option
    engine = RetrieverQueryEngine.from_args(retriever, llm=llm)  # unchanged LlamaIndex code

Each retrieved context (a merged, cited sentence window) is one TextNode whose metadata holds
document_id, title, section_path, start_char, end_char and score.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import Document, NodeWithScore, QueryBundle, TextNode

from ..assemble.context import AssembledContext
from ..ingest import IngestReport
from .common import (
    LEAD_METADATA_KEYS, WindowragSearch, context_id, context_metadata, framework_documents, ingest_sources,
    source_document,
)

# Offsets and scores are for citations and tracing; the LLM reads title, document and section.
LLM_HIDDEN_METADATA = ["start_char", "end_char", "score", *LEAD_METADATA_KEYS]


class WindowragRetriever(BaseRetriever):
    """WindowragRetriever(collection=, connection= | url= | read_url=, filters=, k=, window=,
    token_budget=, rerank=, rse=, …): the keyword options of windowrag_pg.search."""

    def __init__(self, *, collection: str = "default", connection: Any = None, url: str | None = None,
                 read_url: str | None = None, filters: dict[str, Any] | None = None,
                 callback_manager: Any = None, **options: Any) -> None:
        self.windowrag = WindowragSearch(collection=collection, connection=connection, url=url,
                                         read_url=read_url, filters=filters, options=options)
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [_node(c) for c in self.windowrag.search(query_bundle.query_str)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [_node(c) for c in await self.windowrag.asearch(query_bundle.query_str)]


def _node(context: AssembledContext) -> NodeWithScore:
    node = TextNode(id_=context_id(context), text=context.text, metadata=context_metadata(context),
                    excluded_llm_metadata_keys=LLM_HIDDEN_METADATA,
                    excluded_embed_metadata_keys=LLM_HIDDEN_METADATA)
    return NodeWithScore(node=node, score=context.score)


def ingest_documents(documents: Iterable[Document], *, connection: Any = None, collection: str = "default",
                     format: str | None = None, **ingestor_options: Any) -> IngestReport:
    """Ingest LlamaIndex Documents (whole documents: windowrag-pg splits them into sentences
    itself). The document id is doc.id_; errors are reported per document, as Ingestor does.
    CONNECTION: a Connection, a ConnectionPool or a URL of the primary (None: as connect())."""
    # a TextNode has what is read here too (id_, text, metadata)
    documents = framework_documents(documents, (Document, TextNode), "LlamaIndex Documents")
    sources = (source_document(external_id=doc.id_, text=doc.text, metadata=doc.metadata, format=format)
               for doc in documents)
    return ingest_sources(sources, connection=connection, collection=collection, **ingestor_options)
