"""The naive baselines of the evaluation, searched the way other systems search.

- :class:`ChunkSearcher`: top-k fixed-size chunks as they are (LlamaIndex / Haystack chunks).
- :class:`SentenceWindowSearcher`: top-k sentences by cosine, each replaced by its ±w window,
  overlapping windows NOT merged (LlamaIndex SentenceWindowNodeParser +
  MetadataReplacementPostProcessor).

Not windowrag.search_windows: that function merges windows that touch and walks on until it has
k *merged* segments; a baseline must send exactly its k units, each as its own context. With a
token budget, both are cut by :func:`budget.cut_contexts` (whole contexts while they fit, the
next one cut at a token boundary).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from ..assemble.context import AssembledContext, Citation
from ..db.sqlfiles import load_sql
from ..embed.base import Embedder
from ..retrieve.filters import compile_filters
from .budget import cut_contexts


@dataclass(slots=True)
class BaselineResult:
    """What the runner reads of a search result (the Pipeline's result has the same fields)."""

    contexts: list[AssembledContext]
    trace: dict[str, Any]
    abstained: bool = False


class _Searcher:
    """Embed the query, run one SQL statement of top-k units, build contexts, cut to the budget."""

    statement: str  # sql/<name>.sql, with a {document_ids} placeholder

    def __init__(self, conn: psycopg.Connection, *, collection: str, embedder: Embedder) -> None:
        self.conn = conn
        self.collection = collection
        self.embedder = embedder

    def search(self, query: str, *, filters: dict[str, Any] | None = None, k: int = 5,
               token_budget: int | None = None, **options: Any) -> BaselineResult:
        started = time.perf_counter()
        embedding = None if options.get("mode") == "bm25" else self.embedder.embed_query(query)
        embed_ms = (time.perf_counter() - started) * 1000
        condition, params = compile_filters(filters)
        document_ids = (sql.SQL(load_sql("filtered_document_ids")).format(condition=condition)
                        if filters else sql.SQL("NULL"))
        statement = sql.SQL(load_sql(self.statement)).format(document_ids=document_ids)
        params.update(self.parameters(k=k, **options), collection=self.collection, query=query,
                      embedding=embedding, k=k)
        mark = time.perf_counter()
        rows = self.conn.execute(statement, params, prepare=False).fetchall()
        sql_ms = (time.perf_counter() - mark) * 1000
        mark = time.perf_counter()
        contexts = cut_contexts([self.context(row) for row in rows], budget=token_budget,
                                token_offsets=self.embedder.token_offsets)
        assemble_ms = (time.perf_counter() - mark) * 1000
        total_ms = (time.perf_counter() - started) * 1000
        return BaselineResult(contexts, {"timings_ms": {"embed": round(embed_ms, 2), "sql": round(sql_ms, 2),
                                                        "assemble": round(assemble_ms, 2),
                                                        "total": round(total_ms, 2)}})

    def parameters(self, *, k: int, **options: Any) -> dict[str, Any]:
        raise NotImplementedError

    def context(self, row: tuple) -> AssembledContext:
        raise NotImplementedError


class ChunkSearcher(_Searcher):
    """Top-k chunks as they are: the naive baseline (fixed-size token chunks)."""

    statement = "chunk_top_k"

    def parameters(self, *, k: int, mode: str = "dense", candidates: int = 50, rrf_k: int = 60,
                   **_: Any) -> dict[str, Any]:
        return {"mode": mode, "candidates": max(candidates, k), "rrf_k": rrf_k, "ef_search": max(100, candidates)}

    def context(self, row: tuple) -> AssembledContext:
        doc_key, external_id, title, ordinal, start, end, text, tokens, score, dense_rank, bm25_rank = row
        citation = Citation(document_id=external_id, title=title, section_path=(), start_char=start,
                            end_char=end, first_ordinal=ordinal, last_ordinal=ordinal)
        return AssembledContext(
            citation=citation, text=text, score=float(score), token_count=int(tokens or 0), document_key=doc_key,
            hits=[{"sentence_ordinal": ordinal, "dense_rank": dense_rank, "bm25_rank": bm25_rank,
                   "rrf_score": float(score)}])


class SentenceWindowSearcher(_Searcher):
    """Top-k sentences by cosine, each sent as its ±window (clamped), windows not merged."""

    statement = "sentence_window_top_k"

    def parameters(self, *, k: int, window: int = 3, clamp: str = "section", candidates: int = 50,
                   **_: Any) -> dict[str, Any]:
        return {"window": window, "clamp": clamp, "ef_search": max(100, candidates)}

    def context(self, row: tuple) -> AssembledContext:
        (doc_key, external_id, title, section_path, first, last, start, end, text, similarity, rank,
         hit_ordinal) = row
        citation = Citation(document_id=external_id, title=title, section_path=tuple(section_path or ()),
                            start_char=start, end_char=end, first_ordinal=first, last_ordinal=last)
        tokens = self.embedder.count_tokens([text])[0] if text else 0
        return AssembledContext(
            citation=citation, text=text, score=float(similarity), token_count=tokens, document_key=doc_key,
            hits=[{"sentence_ordinal": hit_ordinal, "dense_rank": rank, "bm25_rank": None,
                   "rrf_score": None}])
