"""The asynchronous API: AsyncPipeline on a psycopg AsyncConnection / AsyncConnectionPool, and
windowrag_pg.asearch. It runs the synchronous Pipeline's own steps (windowrag_pg.db.statements):
the statements on the event loop, the models and the selection in worker threads, so its results
are those of Pipeline / windowrag_pg.search.
"""
from __future__ import annotations

from typing import Any

from .db.async_source import async_connection_source
from .db.statements import arun_steps
from .embed.base import Embedder
from .pipeline import Pipeline, PipelineOptions, PipelineResult, search_options
from .rerank.base import Reranker


class AsyncPipeline:
    """AsyncPipeline(conn_or_pool, collection=…): `await pipeline.search(query, k=…, …)`.

    CONN: a psycopg AsyncConnection (concurrent searches take turns on it), an AsyncConnectionPool
    (they overlap up to its size) or a URL. PIPELINE: a Pipeline whose models and collection
    cache to share (windowrag_pg.asearch shares windowrag_pg.search's).
    """

    def __init__(self, conn: Any, *, collection: str = "default", embedder: Embedder | None = None,
                 reranker: Reranker | None = None, verifier: Reranker | None = None,
                 pipeline: Pipeline | None = None) -> None:
        self.source = async_connection_source(conn)
        # the steps only; its own connection is a URL never opened: statements run on SOURCE
        self.pipeline = pipeline or Pipeline(None, collection=collection, embedder=embedder, reranker=reranker,
                                             verifier=verifier)

    async def search(self, query: str, *, filters: dict[str, Any] | None = None, collection: str | None = None,
                     **options: Any) -> PipelineResult:
        return await self.run(query, search_options(options), filters=filters, collection=collection)

    async def run(self, query: str, options: PipelineOptions, *, filters: dict[str, Any] | None = None,
                  collection: str | None = None) -> PipelineResult:
        return await arun_steps(self.pipeline.steps(query, options, filters=filters, collection=collection),
                                self.source)
