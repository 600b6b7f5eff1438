"""Run one configuration over an evaluation set: ingest, sample queries, search, score.

The data format is the one of ``../shared/eval`` (see its README): ``documents.jsonl`` (one
document a line) and ``queries.jsonl`` (``{"id", "query", "gold": [{"doc_id", "start",
"end"}], "answers", "scope_doc_id"}``). A query with ``scope_doc_id`` is searched within that
document only (``filters={"document_id": ...}``).

The sample is nested: the queries are shuffled once with ``seed`` and the first ``limit`` are
taken, so a 300-query sample is the first 300 of the 1,000-query sample with the same seed
and configurations run on different sample sizes can be compared on the common part.
"""
from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from ..assemble.context import AssembledContext, Citation
from ..db.sqlfiles import load_sql
from ..embed.base import Embedder
from ..ingest import Ingestor
from ..rerank.base import Reranker
from ..retrieve.filters import compile_filters
from ..sources import SourceError, iter_sources
from ..store.collections import get_collection
from ..store.writer import delete_document
from . import metrics as m
from .presets import EvalConfig, get_config

STAGES = ("embed", "sql", "fetch", "rerank", "rse", "assemble")
METRIC_KEYS = ("hit@1", "hit@3", "hit@5", "answer_hit@5", "evidence_recall@5", "mrr", "tokens_mean",
               "tokens_p95", "abstain_rate", "latency_ms_p50", "latency_ms_p95")


def read_queries(path: str | Path) -> list[dict[str, Any]]:
    rows = []
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON: {exc}") from exc
            if not isinstance(row, dict) or not isinstance(row.get("query"), str):
                raise ValueError(f"{path}:{number}: a query needs a 'query' string")
            rows.append(row)
    return rows


def sample_queries(queries: Sequence[dict], *, limit: int | None, seed: int, skip: int = 0) -> list[dict]:
    """Queries ``skip`` .. ``skip + limit`` of a seeded shuffle (all of them, shuffled, without limit).

    ``skip`` gives a sample disjoint from the first ``skip`` queries (e.g. to tune on other
    questions than those reported).
    """
    order = list(range(len(queries)))
    random.Random(seed).shuffle(order)
    if skip < 0:
        raise ValueError(f"skip must be >= 0, not {skip}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be positive, not {limit}")
    order = order[skip:] if limit is None else order[skip:skip + limit]
    return [queries[i] for i in order]


def dataset_name(documents_path: str | Path) -> str:
    """The dataset is named after the folder of its documents file (squad-dev/documents.jsonl)."""
    path = Path(documents_path).resolve()
    return path.parent.name if path.stem == "documents" else path.stem


def machine_load() -> dict[str, Any]:
    """What `uptime` says: load averages and cores (latencies depend on them)."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        one = five = fifteen = float("nan")
    return {"loadavg_1m": round(one, 2), "loadavg_5m": round(five, 2), "loadavg_15m": round(fifteen, 2),
            "cores": os.cpu_count(), "at": time.strftime("%Y-%m-%d %H:%M:%S")}


# --------------------------------------------------------------------------------------------
# Ingestion
# --------------------------------------------------------------------------------------------


def ensure_ingested(conn: psycopg.Connection, *, documents_path: str | Path, config: EvalConfig,
                    dataset: str, embedder: Embedder, progress: bool = True) -> dict[str, Any]:
    """Ingest the documents into the configuration's collection so that it holds exactly them.

    Unchanged documents are skipped by content hash; documents of the collection that are not
    in the file any more are deleted (an eval collection mirrors its documents file).
    """
    from tqdm import tqdm

    settings = config.collection
    name = settings.collection_name(dataset)
    ingestor = Ingestor(conn, collection=name, embedder=embedder, contextual_headers=settings.contextual_headers,
                        chunk_tokens=settings.chunk_tokens if settings.unit == "chunk" else None)
    sources = list(iter_sources([documents_path]))
    errors = [s for s in sources if isinstance(s, SourceError)]
    if errors:
        raise ValueError(f"bad documents in {documents_path}: " + "; ".join(f"{e.name}: {e.message}" for e in errors[:5]))
    with tqdm(total=len(sources), unit="doc", desc=f"ingest {name}", disable=None if progress else True,
              file=sys.stderr, leave=False) as bar:
        report = ingestor.ingest(sources, on_document=lambda *_: bar.update(1))
    if report.errors:
        raise ValueError(f"ingestion into {name} failed: " + "; ".join(f"{e.name}: {e.message}" for e in report.errors[:5]))
    wanted = {s.external_id for s in sources}
    collection = get_collection(conn, name)
    stored = [row[0] for row in conn.execute(load_sql("collection_external_ids"), [collection.id]).fetchall()]
    removed = 0
    for external_id in stored:
        if external_id not in wanted:
            removed += delete_document(conn, collection, external_id)
    units = conn.execute(load_sql("collection_unit_count"), [collection.id]).fetchone()[0]
    return {"collection": name, **report.as_dict(), "removed": removed, "units_in_collection": int(units)}


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------


def score_query(query: dict[str, Any], contexts: Sequence[Any], *, tokens: Sequence[int],
                timings_ms: dict[str, float]) -> dict[str, Any]:
    """Per-query row: contexts are AssembledContext (or anything with .citation and .text)."""
    spans = [m.ContextSpan(c.citation.document_id, c.citation.start_char, c.citation.end_char, c.text)
             for c in contexts]
    gold = [m.GoldSpan(str(g["doc_id"]), int(g["start"]), int(g["end"])) for g in query.get("gold") or []]
    answers = query.get("answers") or []
    row: dict[str, Any] = {
        "id": str(query.get("id")),
        "hit@1": m.hit_at_k(spans, gold, 1),
        "hit@3": m.hit_at_k(spans, gold, 3),
        "hit@5": m.hit_at_k(spans, gold, 5),
        "answer_hit@5": m.answer_hit_at_k(spans, answers, 5) if answers else None,
        "evidence_recall@5": m.evidence_recall_at_k(spans, gold, 5),
        "rr": m.reciprocal_rank(spans, gold),
        "tokens": int(sum(tokens)),
        "tokens_reported": int(sum(c.token_count for c in contexts)),
        "duplicated_chars": m.duplicated_chars(spans),
        "duplicated_tokens": m.duplicated_tokens(spans, list(tokens)),
        "abstain": 0.0 if contexts else 1.0,
        "n_contexts": len(contexts),
        "latency_ms": float(timings_ms.get("total", 0.0)),
        "contexts": [[c.citation.document_id, c.citation.start_char, c.citation.end_char, int(t)]
                     for c, t in zip(contexts, tokens)],
    }
    for stage in STAGES:
        row[f"latency_{stage}_ms"] = float(timings_ms.get(stage, 0.0))
    return row


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The metrics block of a run (the names of METRIC_KEYS, plus extras)."""
    agg = m.aggregate(rows, distribution_keys=("latency_ms", "tokens"))
    metrics = {
        "hit@1": agg.get("hit@1"), "hit@3": agg.get("hit@3"), "hit@5": agg.get("hit@5"),
        "answer_hit@5": agg.get("answer_hit@5"), "evidence_recall@5": agg.get("evidence_recall@5"),
        "mrr": agg.get("rr"), "tokens_mean": agg.get("tokens"), "tokens_p95": agg.get("tokens_p95"),
        "abstain_rate": agg.get("abstain"), "latency_ms_p50": agg.get("latency_ms_p50"),
        "latency_ms_p95": agg.get("latency_ms_p95"),
        # extras
        "latency_ms_mean": agg.get("latency_ms"),
        "duplicated_tokens": sum(r["duplicated_tokens"] for r in rows),
        "duplicated_chars": sum(r["duplicated_chars"] for r in rows),
        "tokens_p50": agg.get("tokens_p50"),
        "contexts_mean": agg.get("n_contexts"),
        "answer_hit@5_n": agg.get("answer_hit@5_n"),
    }
    for stage in STAGES:
        metrics[f"latency_{stage}_ms_mean"] = agg.get(f"latency_{stage}_ms")
    return metrics


# --------------------------------------------------------------------------------------------
# Reranking once for several configurations
# --------------------------------------------------------------------------------------------


class CachingReranker(Reranker):
    """Wraps a reranker and remembers each (query, passage) score and what it cost.

    Configurations that differ only after reranking (rerank, rse, full; an RSE sweep) rerank
    the very same windows; with this wrapper the cross-encoder runs once per window. So that
    the latency figures stay honest, ``last_saved_ms`` says how much time the last call saved
    (the time the cached passages took when first scored), and the runner adds it back to the
    rerank stage and the total.
    """

    def __init__(self, inner: Reranker, *, path: str | Path | None = None) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.max_length = inner.max_length
        self.batch_size = inner.batch_size
        self._cache: dict[tuple[str, str], tuple[float, float]] = {}  # -> (logit, ms)
        self.last_saved_ms = 0.0
        # path: a JSON-lines file that keeps the scores across processes (one line a passage)
        self.path = Path(path) if path is not None else None
        if self.path is not None and self.path.exists():
            with self.path.open(encoding="utf-8") as handle:
                for line in handle:
                    try:
                        model, query, passage, logit, ms = json.loads(line)
                    except (json.JSONDecodeError, ValueError):
                        continue  # a line cut short by a crash
                    if model == self.model_id:
                        self._cache[(query, passage)] = (float(logit), float(ms))

    def _logits(self, query: str, passages: list[str], *, batch_size: int) -> np.ndarray:
        missing = [p for p in dict.fromkeys(passages) if (query, p) not in self._cache]
        saved = sum(self._cache[(query, p)][1] for p in passages if (query, p) in self._cache)
        if missing:
            started = time.perf_counter()
            logits = np.asarray(self.inner._logits(query, missing, batch_size=batch_size), dtype=np.float64)
            each = (time.perf_counter() - started) * 1000 / len(missing)
            for passage, logit in zip(missing, logits):
                self._cache[(query, passage)] = (float(logit), each)
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as handle:
                    for passage in missing:
                        logit, ms = self._cache[(query, passage)]
                        handle.write(json.dumps([self.model_id, query, passage, logit, ms]) + "\n")
        self.last_saved_ms = saved
        return np.asarray([self._cache[(query, p)][0] for p in passages], dtype=np.float64)


# --------------------------------------------------------------------------------------------
# The chunk baseline's search
# --------------------------------------------------------------------------------------------



@dataclass(slots=True)
class _Result:
    contexts: list[AssembledContext]
    trace: dict[str, Any]


class ChunkSearcher:
    """Top-k chunks as they are: the naive baseline (LlamaIndex / Haystack fixed-size chunks).

    Not windowrag.search_windows: that function merges units that touch (right for sentence
    windows: no text twice, contiguous text stays contiguous) and walks on until it has k
    *merged* segments, so over a contract of six chunks it would return the whole contract.
    The baseline must send exactly the k best chunks, each as its own context.
    """

    def __init__(self, conn: psycopg.Connection, *, collection: str, embedder: Embedder) -> None:
        self.conn = conn
        self.collection = collection
        self.embedder = embedder

    def search(self, query: str, *, filters: dict[str, Any] | None = None, k: int = 5, mode: str = "dense",
               candidates: int = 50, rrf_k: int = 60, **_: Any) -> _Result:
        started = time.perf_counter()
        embedding = None if mode == "bm25" else self.embedder.embed_query(query)
        embed_ms = (time.perf_counter() - started) * 1000
        condition, params = compile_filters(filters)
        document_ids = (sql.SQL(load_sql("filtered_document_ids")).format(condition=condition)
                        if filters else sql.SQL("NULL"))
        statement = sql.SQL(load_sql("chunk_top_k")).format(document_ids=document_ids)
        params.update(collection=self.collection, query=query, embedding=embedding, mode=mode,
                      candidates=max(candidates, k), rrf_k=rrf_k, ef_search=max(100, candidates), k=k)
        mark = time.perf_counter()
        rows = self.conn.execute(statement, params, prepare=False).fetchall()
        sql_ms = (time.perf_counter() - mark) * 1000
        contexts = []
        for doc_key, external_id, title, ordinal, start, end, text, tokens, score, dense_rank, bm25_rank in rows:
            citation = Citation(document_id=external_id, title=title, section_path=(), start_char=start,
                                end_char=end, first_ordinal=ordinal, last_ordinal=ordinal)
            contexts.append(AssembledContext(
                citation=citation, text=text, score=float(score), token_count=int(tokens or 0),
                document_key=doc_key,
                hits=[{"sentence_ordinal": ordinal, "dense_rank": dense_rank, "bm25_rank": bm25_rank,
                       "rrf_score": float(score)}]))
        total_ms = (time.perf_counter() - started) * 1000
        return _Result(contexts, {"timings_ms": {"embed": round(embed_ms, 2), "sql": round(sql_ms, 2),
                                                 "total": round(total_ms, 2)}})


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------


def run_eval(
    conn: psycopg.Connection,
    *,
    documents_path: str | Path,
    queries_path: str | Path,
    config: str | Path | EvalConfig,
    limit: int | None = None,
    seed: int = 0,
    progress: bool = True,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    dataset: str | None = None,
    keep_rows: bool = False,
    skip: int = 0,
) -> dict[str, Any]:
    """Ingest (if needed), run the sampled queries with ``config``, return the summary dict.

    ``{"dataset", "config" (its name), "n_queries", "metrics": {...}}`` plus ``"settings"`` (the
    whole configuration), ``"collection"``,
    ``"seed"``, ``"limit"``, ``"ingest"``, ``"load"`` (machine load before and after) and,
    with ``keep_rows``, ``"rows"`` (one dict per query).
    """
    from tqdm import tqdm

    from ..embed import get_embedder
    from ..pipeline import Pipeline

    config = get_config(config)
    dataset = dataset or dataset_name(documents_path)
    embedder = embedder or get_embedder()
    load_before = machine_load()

    ingest = ensure_ingested(conn, documents_path=documents_path, config=config, dataset=dataset,
                             embedder=embedder, progress=progress)
    queries = sample_queries(read_queries(queries_path), limit=limit, seed=seed, skip=skip)
    if config.collection.unit == "chunk":
        pipe = ChunkSearcher(conn, collection=ingest["collection"], embedder=embedder)
    else:
        pipe = Pipeline(conn, collection=ingest["collection"], embedder=embedder, reranker=reranker)
    options = config.pipeline_options()

    def search(query: dict[str, Any], *, text: str | None = None):
        scope = query.get("scope_doc_id")
        filters = {"document_id": str(scope)} if scope is not None else None
        return pipe.search(text or query["query"], filters=filters, **options)

    if queries:  # warm-up (model loading, caches), not timed; its own text so no rerank score is cached
        search(queries[0], text=f"{queries[0]['query']} (warm-up)")

    rows = []
    started = time.perf_counter()
    for query in tqdm(queries, unit="q", desc=f"{dataset} {config.name}", disable=None if progress else True,
                      file=sys.stderr, leave=False):
        if isinstance(reranker, CachingReranker):
            reranker.last_saved_ms = 0.0
        result = search(query)
        timings = dict(result.trace.get("timings_ms", {}))
        if isinstance(reranker, CachingReranker) and reranker.last_saved_ms:
            # the cross-encoder's cost as first measured, as if this run had paid it
            timings["rerank"] = timings.get("rerank", 0.0) + reranker.last_saved_ms
            timings["total"] = timings.get("total", 0.0) + reranker.last_saved_ms
        tokens = embedder.count_tokens([c.text for c in result.contexts]) if result.contexts else []
        rows.append(score_query(query, result.contexts, tokens=tokens, timings_ms=timings))
    wall = time.perf_counter() - started

    summary: dict[str, Any] = {
        "dataset": dataset,
        "config": config.name,
        "n_queries": len(rows),
        "metrics": summarise(rows),
        "settings": config.as_dict(),
        "collection": ingest["collection"],
        "seed": seed,
        "limit": limit,
        "skip": skip,
        "ingest": ingest,
        "wall_seconds": round(wall, 2),
        "load": {"before": load_before, "after": machine_load()},
    }
    if keep_rows:
        summary["rows"] = rows
    return summary
