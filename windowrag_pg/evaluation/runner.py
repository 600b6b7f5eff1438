"""Run one configuration over an evaluation set: ingest, sample queries, search, score.

The data format is the one of ``../shared/eval`` (see its README): ``documents.jsonl`` (one
document a line) and ``queries.jsonl`` (``{"id", "query", "gold": [{"doc_id", "start",
"end"}], "answers", "scope_doc_id"}``). A query with ``scope_doc_id`` is searched within that
document only (``filters={"document_id": ...}``).

The sample is nested: the queries are shuffled once with ``seed`` and the first ``limit`` are
taken, so a 300-query sample is the first 300 of the 1,000-query sample with the same seed
and configurations run on different sample sizes can be compared on the common part.

Out-of-corpus runs (``out_of_corpus``) ask one set's queries of another set's collection: the
gold is dropped (nothing there answers them), so only the abstain rate means something.
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

from ..db.sqlfiles import load_sql
from ..embed.base import Embedder
from ..ingest import Ingestor
from ..parse import has_visible_text
from ..rerank.base import Reranker
from ..sources import SourceError, iter_sources
from ..store.collections import get_collection
from ..store.writer import delete_document
from . import metrics as m
from .baselines import ChunkSearcher, SentenceWindowSearcher
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


OUT_OF_CORPUS = ("scoped", "unscoped")


def out_of_corpus_queries(queries: Sequence[dict], *, scope: str, document_ids: Sequence[str],
                          seed: int) -> list[dict]:
    """QUERIES asked of a collection that does not answer them: gold and answers dropped.

    ``scope="unscoped"`` searches the whole collection; ``"scoped"`` searches one document per
    query, as the in-corpus queries of a scoped set (ContractNLI) are: a document of
    DOCUMENT_IDS chosen by SEED and the query's id, so the same query always gets the same
    document whatever the sample.
    """
    if scope not in OUT_OF_CORPUS:
        raise ValueError(f"out_of_corpus must be one of {', '.join(OUT_OF_CORPUS)}, not {scope!r}")
    documents = sorted(str(d) for d in document_ids)
    if scope == "scoped" and not documents:
        raise ValueError("out-of-corpus queries cannot be scoped: the collection has no documents")
    asked = []
    for query in queries:
        row = {**query, "gold": [], "answers": [], "scope_doc_id": None}
        if scope == "scoped":
            row["scope_doc_id"] = random.Random(f"{seed}:{query.get('id')}").choice(documents)
        asked.append(row)
    return asked


def answerable_queries(queries: Sequence[dict], *, document_ids: Sequence[str]) -> tuple[list[dict], int]:
    """The QUERIES whose gold (and scope) documents are among DOCUMENT_IDS, and how many were not:
    a run over some of a set's documents would count the others' queries as misses."""
    present = {str(d) for d in document_ids}
    kept = [q for q in queries
            if (q.get("scope_doc_id") is None or str(q["scope_doc_id"]) in present)
            and (not q.get("gold") or any(str(g["doc_id"]) in present for g in q["gold"]))]
    return kept, len(queries) - len(kept)


def dataset_name(path: str | Path) -> str:
    """A dataset is named after the folder of its documents or queries file (squad-dev/documents.jsonl)."""
    path = Path(path).resolve()
    return path.parent.name if path.stem in ("documents", "queries") else path.stem


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
    name = settings.collection_name(dataset, embedder.model_id)
    ingestor = Ingestor(conn, collection=name, embedder=embedder, contextual_headers=settings.contextual_headers,
                        chunk_tokens=settings.chunk_tokens if settings.unit == "chunk" else None)
    sources = list(iter_sources([documents_path]))
    errors = [s for s in sources if isinstance(s, SourceError)]
    if errors:
        raise ValueError(f"bad documents in {documents_path}: " + "; ".join(f"{e.name}: {e.message}" for e in errors[:5]))
    # a page without text can hold no evidence (the handbook has three): left out and listed;
    # any other document the library refuses still fails the evaluation
    empty, kept = [], []
    for s in sources:
        (kept if s.text is None or has_visible_text(s.text) else empty).append(s)
    sources, empty = kept, [s.name for s in empty]
    if empty:
        print(f"windowrag eval: {len(empty)} empty documents left out: {', '.join(empty[:5])}", file=sys.stderr)
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
    return {"collection": name, **report.as_dict(), "removed": removed, "units_in_collection": int(units),
            "empty_left_out": empty}


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------


def score_query(query: dict[str, Any], contexts: Sequence[Any], *, tokens: Sequence[int],
                timings_ms: dict[str, float], first_section: m.ContextSpan | None = None,
                abstained: bool | None = None, token_budget: int | None = None) -> dict[str, Any]:
    """Per-query row: contexts are AssembledContext (or anything with .citation and .text).

    ``first_section``: the character range of the first context's section (wrong_section@1);
    ``abstained``: what the searcher said (default: no context returned).
    """
    spans = [m.ContextSpan(c.citation.document_id, c.citation.start_char, c.citation.end_char, c.text)
             for c in contexts]
    gold = [m.GoldSpan(str(g["doc_id"]), int(g["start"]), int(g["end"])) for g in query.get("gold") or []]
    answers = query.get("answers") or []
    total = int(sum(tokens))
    row: dict[str, Any] = {
        "id": str(query.get("id")),
        "hit@1": m.hit_at_k(spans, gold, 1),
        "hit@3": m.hit_at_k(spans, gold, 3),
        "hit@5": m.hit_at_k(spans, gold, 5),
        "answer_hit@5": m.answer_hit_at_k(spans, answers, 5) if answers else None,
        "evidence_recall@5": m.evidence_recall_at_k(spans, gold, 5),
        "rr": m.reciprocal_rank(spans, gold),
        "wrong_section@1": m.wrong_section_at_1(first_section if spans else None, gold),
        "tokens": total,
        "tokens_reported": int(sum(c.token_count for c in contexts)),
        "over_budget": None if token_budget is None else float(total > token_budget),
        "duplicated_chars": m.duplicated_chars(spans),
        "duplicated_tokens": m.duplicated_tokens(spans, list(tokens)),
        "abstain": float(not contexts if abstained is None else abstained),
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
        "wrong_section@1": agg.get("wrong_section@1"),
        "wrong_section@1_n": agg.get("wrong_section@1_n"),
        "over_budget_rate": agg.get("over_budget"),
        "tokens_max": max((r["tokens"] for r in rows), default=None),
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


def first_section(conn: psycopg.Connection, *, collection: str, config: EvalConfig,
                  context: Any) -> m.ContextSpan:
    """The character range of the section the context starts in; the whole document for chunks
    (a chunk may cross sections) or when the database knows no such section."""
    document_id = context.citation.document_id
    if config.collection.unit == "sentence":
        row = conn.execute(load_sql("context_section"), {"collection": collection, "document_id": document_id,
                                                         "position": context.citation.start_char}).fetchone()
        if row is not None:
            return m.ContextSpan(document_id, int(row[0]), int(row[1]))
    return m.ContextSpan(document_id, 0, 2**31 - 1)


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
# The run
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Setup:
    """What every budget of a run shares: the ingested collection, the queries, the searcher."""

    config: EvalConfig
    dataset: str
    queries: list[dict[str, Any]]
    searcher: Any
    ingest: dict[str, Any]
    embedder: Embedder
    reranker: Reranker | None
    load_before: dict[str, Any]
    queries_dataset: str
    queries_left_out: int = 0  # their gold documents are not among the documents (answerable_queries)


def _make_searcher(conn: psycopg.Connection, config: EvalConfig, *, collection: str, embedder: Embedder,
                   reranker: Reranker | None):
    if config.searcher == "chunks":
        return ChunkSearcher(conn, collection=collection, embedder=embedder)
    if config.searcher == "window_nomerge":
        return SentenceWindowSearcher(conn, collection=collection, embedder=embedder)
    from ..pipeline import Pipeline

    return Pipeline(conn, collection=collection, embedder=embedder, reranker=reranker)


def _setup(conn: psycopg.Connection, *, documents_path: str | Path, queries_path: str | Path,
           config: str | Path | EvalConfig, limit: int | None, seed: int, skip: int, progress: bool,
           embedder: Embedder | None, reranker: Reranker | None, dataset: str | None,
           out_of_corpus: str | None) -> _Setup:
    from ..embed import get_embedder

    config = get_config(config)
    dataset = dataset or dataset_name(documents_path)
    embedder = embedder or get_embedder()
    load_before = machine_load()
    ingest = ensure_ingested(conn, documents_path=documents_path, config=config, dataset=dataset,
                             embedder=embedder, progress=progress)
    collection = get_collection(conn, ingest["collection"])
    documents = [row[0] for row in conn.execute(load_sql("collection_external_ids"), [collection.id]).fetchall()]
    queries, left_out = read_queries(queries_path), 0
    if out_of_corpus is None:
        asked = len(queries)
        queries, left_out = answerable_queries(queries, document_ids=documents)
        if asked and not queries:
            raise ValueError(f"none of the {asked} queries of {queries_path} has its gold document among the "
                             f"documents of {documents_path} (to ask them anyway, use --out-of-corpus)")
    queries = sample_queries(queries, limit=limit, seed=seed, skip=skip)
    if out_of_corpus is not None:
        queries = out_of_corpus_queries(queries, scope=out_of_corpus, document_ids=documents, seed=seed)
    searcher = _make_searcher(conn, config, collection=ingest["collection"], embedder=embedder, reranker=reranker)
    return _Setup(config=config, dataset=dataset, queries=queries, searcher=searcher, ingest=ingest,
                  embedder=embedder, reranker=reranker, load_before=load_before,
                  queries_dataset=dataset_name(queries_path), queries_left_out=left_out)


def _run_queries(conn: psycopg.Connection, setup: _Setup, config: EvalConfig, *,
                 progress: bool) -> tuple[list[dict[str, Any]], float]:
    """Search and score every query of SETUP with CONFIG: (rows, wall seconds)."""
    from tqdm import tqdm

    options = config.pipeline_options()
    reranker = setup.reranker

    def search(query: dict[str, Any], *, text: str | None = None):
        scope = query.get("scope_doc_id")
        filters = {"document_id": str(scope)} if scope is not None else None
        return setup.searcher.search(text or query["query"], filters=filters, **options)

    if setup.queries:  # warm-up (model loading, caches), not timed; its own text so no rerank score is cached
        search(setup.queries[0], text=f"{setup.queries[0]['query']} (warm-up)")

    rows = []
    started = time.perf_counter()
    label = f"{setup.dataset} {config.name}" + (f" @{config.token_budget}" if config.token_budget else "")
    for query in tqdm(setup.queries, unit="q", desc=label, disable=None if progress else True,
                      file=sys.stderr, leave=False):
        if isinstance(reranker, CachingReranker):
            reranker.last_saved_ms = 0.0
        result = search(query)
        timings = dict(result.trace.get("timings_ms", {}))
        if isinstance(reranker, CachingReranker) and reranker.last_saved_ms:
            # the cross-encoder's cost as first measured, as if this run had paid it
            timings["rerank"] = timings.get("rerank", 0.0) + reranker.last_saved_ms
            timings["total"] = timings.get("total", 0.0) + reranker.last_saved_ms
        contexts = result.contexts
        tokens = setup.embedder.count_tokens([c.text for c in contexts]) if contexts else []
        section = (first_section(conn, collection=setup.ingest["collection"], config=config, context=contexts[0])
                   if contexts and query.get("gold") else None)
        row = score_query(query, contexts, tokens=tokens, timings_ms=timings, first_section=section,
                          abstained=getattr(result, "abstained", None), token_budget=config.token_budget)
        # the pipeline's P(the corpus answers): any min_relevance can be simulated from the rows
        relevance = result.trace.get("relevance")
        row["relevance"] = float(relevance) if isinstance(relevance, (int, float)) else None
        # the cross-encoder's best score when the query was in the verification band
        verification = result.trace.get("verification")
        row["verify_score"] = max(verification["scores"], default=0.0) if verification else None
        rows.append(row)
    return rows, time.perf_counter() - started


def _summary(setup: _Setup, *, seed: int, limit: int | None, skip: int, out_of_corpus: str | None) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "dataset": setup.dataset,
        "config": setup.config.name,
        "n_queries": len(setup.queries),
        "settings": setup.config.as_dict(),
        "collection": setup.ingest["collection"],
        "seed": seed,
        "limit": limit,
        "skip": skip,
        "ingest": setup.ingest,
    }
    if out_of_corpus is not None:
        summary.update(out_of_corpus=out_of_corpus, queries_dataset=setup.queries_dataset)
    if setup.queries_left_out:
        summary["queries_left_out"] = setup.queries_left_out
    return summary


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
    out_of_corpus: str | None = None,
) -> dict[str, Any]:
    """Ingest (if needed), run the sampled queries with ``config``, return the summary dict.

    ``{"dataset", "config" (its name), "n_queries", "metrics": {...}}`` plus ``"settings"`` (the
    whole configuration), ``"collection"``,
    ``"seed"``, ``"limit"``, ``"ingest"``, ``"load"`` (machine load before and after) and,
    with ``keep_rows``, ``"rows"`` (one dict per query). ``out_of_corpus`` ("scoped" |
    "unscoped"): the queries are another set's, asked of this collection
    (:func:`out_of_corpus_queries`); the result then says so and names the queries' set.
    """
    setup = _setup(conn, documents_path=documents_path, queries_path=queries_path, config=config, limit=limit,
                   seed=seed, skip=skip, progress=progress, embedder=embedder, reranker=reranker, dataset=dataset,
                   out_of_corpus=out_of_corpus)
    rows, wall = _run_queries(conn, setup, setup.config, progress=progress)
    summary = _summary(setup, seed=seed, limit=limit, skip=skip, out_of_corpus=out_of_corpus)
    summary.update(metrics=summarise(rows), token_budget=setup.config.token_budget, wall_seconds=round(wall, 2),
                   load={"before": setup.load_before, "after": machine_load()})
    if keep_rows:
        summary["rows"] = rows
    return summary


def run_curve(
    conn: psycopg.Connection,
    *,
    documents_path: str | Path,
    queries_path: str | Path,
    config: str | Path | EvalConfig,
    budgets: Sequence[int],
    limit: int | None = None,
    seed: int = 0,
    progress: bool = True,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    dataset: str | None = None,
    keep_rows: bool = False,
    skip: int = 0,
    out_of_corpus: str | None = None,
) -> dict[str, Any]:
    """``config`` once per token budget, on one ingestion and one query sample.

    ``{"dataset", "config", "curve": [{"token_budget": B, "metrics": {...}, "wall_seconds",
    ("rows")}, ...]}`` plus the keys of :func:`run_eval` that do not depend on the budget.
    With the cross-encoder, each window is scored once for all budgets (CachingReranker; the
    latency figures add the first scoring's time back).
    """
    budgets = [int(b) for b in budgets]
    if not budgets or any(b < 1 for b in budgets):
        raise ValueError(f"budgets must be positive integers, not {budgets!r}")
    config = get_config(config)
    if config.rerank and reranker is None:
        from ..rerank import get_reranker

        reranker = CachingReranker(get_reranker())
    setup = _setup(conn, documents_path=documents_path, queries_path=queries_path, config=config, limit=limit,
                   seed=seed, skip=skip, progress=progress, embedder=embedder, reranker=reranker, dataset=dataset,
                   out_of_corpus=out_of_corpus)
    curve = []
    for budget in budgets:
        rows, wall = _run_queries(conn, setup, config.replace(token_budget=budget), progress=progress)
        point: dict[str, Any] = {"token_budget": budget, "metrics": summarise(rows), "wall_seconds": round(wall, 2)}
        if keep_rows:
            point["rows"] = rows
        curve.append(point)
    summary = _summary(setup, seed=seed, limit=limit, skip=skip, out_of_corpus=out_of_corpus)
    summary.update(budgets=budgets, curve=curve, load={"before": setup.load_before, "after": machine_load()})
    return summary
