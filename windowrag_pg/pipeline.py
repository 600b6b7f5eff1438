"""The whole chain in one call, with a trace. Two ways to choose what is sent:

- ``selection="segments"`` (default): budget-first. One statement returns every sentence near
  the fused hits with its own signals (windowrag.candidate_sentences); each gets a value
  (segment/values.py); the exact best runs of sentences within the token budget are chosen
  (segment/select.py); a query the corpus does not answer is abstained on (min_relevance, and
  the cross-encoder over its best sentences where the relevance model is unsure: verify_below);
  a second statement fetches the chosen text, a run that starts inside a list or table with its
  lead in front (the list's lead-in or the table's header row: select.run_leads).
- ``selection="windows"``: fixed ±window windows merged in SQL (windowrag.search_windows), then
  optionally the cross-encoder and the sentence-count RSE (``rse=``), then the budget cuts the
  ranked list. Kept for comparison (the evaluation's `windows` preset).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import psycopg

from .assemble.context import (
    LEAD_SEPARATOR, ORDERS, AssembledContext, Citation, SentenceInfo, apply_token_budget, fit_sentences,
    fit_token_budget, order_contexts, run_section_path,
)
from .db.source import connection_source
from .db.sqlfiles import load_sql
from .db.statements import Statement, Steps, run_steps
from .embed.base import Embedder
from .limits import LIMITS, MAX_RETURNED_TOKENS, first_problem, problem
from .rerank.base import Reranker
from .retrieve.retriever import CLAMPS, MODES, Context, QueryError, Retriever, SearchOptions
from .retrieve.retriever import Candidates
from .segment.abstain import (
    abstain_reason, lexical_abstain_reason, needs_verification, sentences_to_verify, verify_passages,
)
from .segment.relevance import window_sentence_relevance
from .segment.rse import RSEParams, best_segments, get_params
from .segment.select import Run, budget_for_all, choose_segments, only_unsendable_match, run_leads
from .segment.values import Lead, fold_reranker_scores

# segments: budget-first (sentence values + RSE); windows: fixed merged windows from SQL;
# value_windows: sentence values with fixed ±window windows, RSE off (for comparison)
SELECTIONS = ("segments", "windows", "value_windows")
DEFAULT_WINDOW = 3


@dataclass(frozen=True, slots=True)
class PipelineOptions:
    """Defaults = the `full` preset of the evaluation (docs/evaluation.md): hybrid retrieval,
    budget-first segment selection within token_budget tokens, at most k contexts, abstention
    below min_relevance (checked by the cross-encoder below verify_below). Reranking with the
    cross-encoder is opt-in (seconds per query on CPU)."""

    k: int = 5
    # tokens (the embedder's tokenizer) all contexts may hold together; None: no budget
    # 1,200: the knee of both dev curves (docs/evaluation.md, "Default budget")
    token_budget: int | None = 1200
    selection: str = "segments"
    # below this relevance (P(the corpus answers), segment/values.py) nothing is returned; None:
    # never abstain. From min_relevance up to verify_below the cross-encoder reads the query's two
    # most valuable sentences, each with its neighbours (30-75 ms), and nothing is returned when
    # neither scores verify_min_score (segment/abstain.py). Chosen on the dev sets' in- and
    # out-of-corpus questions (docs/evaluation.md, "Abstention"): 3-8% of in-corpus questions are checked.
    # verify_below None: the relevance model alone (then 0.17 was the dev choice for min_relevance).
    min_relevance: float | None = 0.05
    verify_below: float | None = 0.50
    verify_min_score: float = 0.011  # the cross-encoder's probability; logit -4.5
    # segments: price of a sentence, as a share of the query's best sentence value per 32 tokens
    sentence_floor: float = 0.0
    # segments: how far (sentences) from a fused hit a sentence may be sent
    radius: int = 6
    window: int = DEFAULT_WINDOW  # sentences each side: selection 'windows' and 'value_windows' only
    mode: str = "hybrid"
    rerank: bool = False
    # windows retrieved for the cross-encoder, of which it scores those (in retrieval order, at
    # least k) whose text fits rerank_token_budget: its cost grows with the tokens it reads
    # (~0.3 ms a token on 2 cores), so short windows can be many and long ones few
    # (docs/performance.md, "Rerank stage")
    rerank_candidates: int = 20
    rerank_token_budget: int | None = 1500
    # the cross-encoder reads at most this many tokens of each window: whole sentences around
    # its hits (None: the whole window, up to the model's 512). 384 cuts only long merged
    # windows; 256 lost recall (docs/performance.md).
    rerank_tokens: int | None = 384
    # sentences the retrieved segments may hold together (None: no budget when k windows are
    # retrieved; R windows' worth when R > k are retrieved to rerank)
    max_sentences: int | None = None
    rse: str | RSEParams | None = None
    candidates: int = 20
    order: str = "score"
    clamp: str = "section"
    ef_search: int = 100
    rrf_k: int = 60
    # RSE inside a window: relevance fades with distance to the nearest hit (sentences)
    proximity_scale: float = 4.0

    def __post_init__(self) -> None:
        if self.selection not in SELECTIONS:
            raise QueryError(f"selection must be one of {', '.join(SELECTIONS)}, not {self.selection!r}")
        if self.min_relevance is not None and (isinstance(self.min_relevance, bool)
                                               or not isinstance(self.min_relevance, (int, float))
                                               or not 0.0 <= self.min_relevance <= 1.0):
            raise QueryError(f"min_relevance must be a number between 0 and 1, not {self.min_relevance!r}")
        for name in ("verify_below", "verify_min_score"):
            value = getattr(self, name)
            if (value is not None or name == "verify_min_score") and (
                    isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0):
                raise QueryError(f"{name} must be a number between 0 and 1, not {value!r}")
        if isinstance(self.sentence_floor, bool) or not isinstance(self.sentence_floor, (int, float)) \
                or not 0.0 <= self.sentence_floor <= 10.0:
            raise QueryError(f"sentence_floor must be a number between 0 and 10, not {self.sentence_floor!r}")
        found = first_problem(**{name: getattr(self, name) for name in (
            "k", "window", "candidates", "ef_search", "rrf_k", "max_sentences", "rerank_candidates",
            "rerank_tokens", "rerank_token_budget", "token_budget")})
        if found:
            raise QueryError(found)
        # first_problem passes None over (an option left unset); these have no "unset"
        for name in ("k", "window", "candidates", "ef_search", "rrf_k", "rerank_candidates"):
            if getattr(self, name) is None:
                raise QueryError(problem(name, None))
        for name, allowed in (("mode", MODES), ("clamp", CLAMPS), ("order", ORDERS)):
            if getattr(self, name) not in allowed:
                raise QueryError(f"{name} must be one of {', '.join(allowed)}, not {getattr(self, name)!r}")
        if not isinstance(self.rerank, bool):
            raise QueryError(f"rerank must be True or False, not {self.rerank!r}")
        if not isinstance(self.radius, int) or isinstance(self.radius, bool) or not 0 <= self.radius <= 1000:
            raise QueryError(f"radius must be an integer between 0 and 1000, not {self.radius!r}")
        if isinstance(self.proximity_scale, bool) or not isinstance(self.proximity_scale, (int, float)) \
                or not 0 < self.proximity_scale < float("inf"):
            raise QueryError(f"proximity_scale must be a positive number, not {self.proximity_scale!r}")
        if self.rse is not None and not isinstance(self.rse, RSEParams):
            try:
                get_params(self.rse)
            except (ValueError, TypeError) as exc:
                raise QueryError(f"rse: {exc}") from None

    def candidate_search(self) -> SearchOptions:
        """The search that gives the segments selection its candidates (windowrag.candidate_sentences)."""
        return SearchOptions(k=self.k, window=self.window, mode=self.mode, candidates=self.candidates,
                             clamp=self.clamp, rrf_k=self.rrf_k, ef_search=self.ef_search, radius=self.radius)


def search_options(options: dict[str, Any]) -> PipelineOptions:
    """The keyword options of a search (windowrag_pg.search, Pipeline.search, the adapters) as
    PipelineOptions. Unknown names raise QueryError listing the valid ones: PipelineOptions(top_k=5)
    raised a bare TypeError from its __init__."""
    names = [f.name for f in fields(PipelineOptions)]
    if "options" in options:
        raise QueryError("search takes its options as keywords (k=5, token_budget=800, …), not options=; "
                         "a PipelineOptions goes to Pipeline.run(query, options)")
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise QueryError(f"unknown search option(s) {', '.join(unknown)}; "
                         f"the options of windowrag_pg.search are {', '.join(names)}")
    return PipelineOptions(**options)


@dataclass(slots=True)
class PipelineResult:
    query: str
    contexts: list[AssembledContext]
    trace: dict[str, Any] = field(default_factory=dict)
    # True when nothing relevant was found: no context, and trace["abstain"] says why
    abstained: bool = False

    def as_dict(self, *, with_trace: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {"query": self.query, "abstained": self.abstained,
                                "contexts": [c.as_dict() for c in self.contexts]}
        if with_trace:
            data["trace"] = self.trace
        return data


@dataclass(slots=True)
class _Window:
    """A retrieved (merged) window with its sentences and scores, between stages."""

    context: Context
    retrieval_rank: int
    sentences: list[SentenceInfo] = field(default_factory=list)
    score: float = 0.0  # reranker probability, or fused score scaled to [0, 1]


class Pipeline:
    def __init__(self, conn: psycopg.Connection | Any, *, collection: str = "default",
                 embedder: Embedder | None = None, reranker: Reranker | None = None,
                 verifier: Reranker | None = None) -> None:
        # a Connection, a psycopg_pool ConnectionPool or a URL: a pooled connection is held
        # per statement, so the models never keep one from other requests
        self.source = connection_source(conn)
        self.retriever = Retriever(self.source, embedder=embedder, collection=collection)
        self._reranker = reranker
        self._verifier = verifier

    @property
    def reranker(self) -> Reranker:
        if self._reranker is None:
            from .rerank import get_reranker

            self._reranker = get_reranker()
        return self._reranker

    @property
    def verifier(self) -> Reranker:
        """The cross-encoder of the abstention check: verify_min_score is calibrated on the
        default model's scores, so it is that model (the reranker's instance when it is one)."""
        if self._verifier is None:
            from .rerank import DEFAULT_RERANKER_MODEL_ID, get_reranker

            same = self._reranker is not None and getattr(self._reranker, "model_id", None) == DEFAULT_RERANKER_MODEL_ID
            self._verifier = self._reranker if same else get_reranker()
        return self._verifier

    def search(self, query: str, *, filters: dict[str, Any] | None = None, collection: str | None = None,
               **options: Any) -> PipelineResult:
        return self.run(query, search_options(options), filters=filters, collection=collection)

    def run(self, query: str, options: PipelineOptions, *, filters: dict[str, Any] | None = None,
            collection: str | None = None) -> PipelineResult:
        return run_steps(self.steps(query, options, filters=filters, collection=collection), self.source)

    def steps(self, query: str, options: PipelineOptions, *, filters: dict[str, Any] | None = None,
              collection: str | None = None) -> Steps[PipelineResult]:
        """The whole chain as steps (windowrag_pg.db.statements): run() drives them on this
        pipeline's connection, AsyncPipeline on an async one."""
        if options.selection in ("segments", "value_windows") and options.rse is None:
            return (yield from self._segment_steps(query, options, filters=filters, collection=collection))
        return (yield from self._window_steps(query, options, filters=filters, collection=collection))

    def _segment_steps(self, query: str, options: PipelineOptions, *, filters: dict[str, Any] | None,
                       collection: str | None) -> Steps[PipelineResult]:
        started = time.perf_counter()
        candidates = yield from self.retriever.candidates_steps(
            query, options.candidate_search(), filters=filters, collection=collection)
        timings = dict(candidates.timings_ms)
        mark = time.perf_counter()
        budget = options.token_budget or budget_for_all(candidates.sentences)
        selection = choose_segments(candidates.sentences, query_idf=candidates.query_idf, background=candidates.background, budget=budget,
                                    max_segments=options.k, sentence_floor=options.sentence_floor,
                                    window=_fixed_window(options))
        timings["select_ms"] = (time.perf_counter() - mark) * 1000
        verification = None
        lexical = options.mode == "bm25"  # no cosines: the cross-encoder alone decides whether to answer
        if candidates.sentences and (
                needs_verification(selection.relevance, min_relevance=options.min_relevance,
                                   verify_below=options.verify_below)
                or lexical and None not in (options.min_relevance, options.verify_below)):
            mark = time.perf_counter()
            verification = yield from self._verify_steps(candidates, selection.probabilities)
            timings["verify_ms"] = (time.perf_counter() - mark) * 1000
        if not candidates.sentences:
            abstain = "no sentence matched the query"
        elif lexical:
            abstain = lexical_abstain_reason(None if verification is None else verification["scores"],
                                             min_relevance=options.min_relevance,
                                             verify_min_score=options.verify_min_score)
        else:
            abstain = abstain_reason(selection.relevance, min_relevance=options.min_relevance,
                                     verify_below=options.verify_below,
                                     verify_scores=None if verification is None else verification["scores"],
                                     verify_min_score=options.verify_min_score)
        if abstain is None and candidates.sentences and only_unsendable_match(
                candidates.sentences, selection.probabilities, min_relevance=options.min_relevance):
            abstain = ("only headings matched the query (a value of min_relevance "
                       f"{options.min_relevance} or more), of sections with no text under them")
        rerank_trace = None
        if options.rerank and selection.runs and abstain is None:
            mark = time.perf_counter()
            selection, rerank_trace = yield from self._rerank_segment_steps(candidates, selection, options, budget)
            timings["rerank_ms"] = (time.perf_counter() - mark) * 1000
        mark = time.perf_counter()
        if abstain is None and not selection.runs:
            abstain = ("only headings matched the query" if all(c.kind == "heading" for c in candidates.sentences)
                       else f"no sentence is worth its tokens at sentence_floor {options.sentence_floor} (each "
                            "sentence costs that share of the query's best value; a lower floor sends more)"
                       if options.sentence_floor > 0 else "no sentence fits the token budget")
        runs = [] if abstain else selection.runs
        contexts = [_context_from_run(candidates, run, selection.probabilities, lead)
                    for run, lead in zip(runs, run_leads(candidates.sentences, runs))]
        contexts = order_contexts(contexts, order=options.order)
        timings["assemble_ms"] = (time.perf_counter() - mark) * 1000
        mark = time.perf_counter()
        kept = yield from self._fill_text(contexts)
        changed = len(contexts) - len(kept)
        contexts = kept
        if candidates.count_tokens is not None:  # without a budget too: token_count is the text's count
            contexts = fit_token_budget(contexts, budget=options.token_budget or MAX_RETURNED_TOKENS,
                                        count_tokens=candidates.count_tokens)
            if not contexts and abstain is None:
                abstain = "no sentence fits the token budget"
        timings["fetch_ms"] = (time.perf_counter() - mark) * 1000
        timings["total_ms"] = (time.perf_counter() - started) * 1000
        trace = {
            "options": {**asdict(options), "filters": filters},
            "relevance": round(selection.relevance, 4),
            "verification": verification,
            "abstain": abstain,
            "candidates": len(candidates.sentences),
            "rerank": rerank_trace,
            "segments": [{"document_id": candidates.documents[candidates.sentences[r.start].document_key][0],
                          "first_ordinal": candidates.sentences[r.start].ordinal,
                          "last_ordinal": candidates.sentences[r.end - 1].ordinal,
                          "value": round(r.value, 4), "tokens": r.tokens} for r in runs],
            "contexts": [{"document_id": c.citation.document_id, "first_ordinal": c.citation.first_ordinal,
                          "last_ordinal": c.citation.last_ordinal, "tokens": c.token_count, "score": c.score}
                         for c in contexts],
            "timings_ms": {key.removesuffix("_ms"): round(value, 2) for key, value in timings.items()},
            "notes": candidates.notes + _ignored_option_notes(options) + _changed_notes(changed),
        }
        return PipelineResult(query=candidates.query, contexts=contexts, trace=trace, abstained=abstain is not None)

    def _verify_steps(self, candidates: Candidates, probabilities: np.ndarray) -> Steps[dict[str, Any]]:
        """The cross-encoder's scores of the query's most valuable sentences, each read with its
        neighbours among the candidates (segment/abstain.py)."""
        indexes = sentences_to_verify(probabilities)
        chosen = [candidates.sentences[i] for i in indexes]
        rows = yield text_slices(verify_passages(candidates.sentences, indexes))
        texts = dict(rows)  # (a document replaced meanwhile has no row: its passage reads as "")
        scores = self.verifier.score(candidates.query, [texts.get(i, "") for i in range(1, len(chosen) + 1)])
        return {"sentences": [{"document_id": candidates.documents[c.document_key][0], "ordinal": c.ordinal}
                              for c in chosen],
                "scores": [float(s) for s in scores]}

    def _rerank_segment_steps(self, candidates: Candidates, selection, options: PipelineOptions,
                              budget: int) -> Steps[tuple]:
        """The cross-encoder's say in segment selection: the best runs within rerank_token_budget
        (at most rerank_candidates of them, each read up to rerank_tokens) are scored; their
        sentences' values fold in those scores (segment/values.py); the selection is made again
        within the real budget."""
        wide = choose_segments(candidates.sentences, query_idf=candidates.query_idf, background=candidates.background,
                               budget=max(budget, options.rerank_token_budget or budget),
                               max_segments=max(options.k, options.rerank_candidates),
                               probabilities=selection.probabilities,  # the values already computed
                               relevance=selection.relevance)
        runs = wide.runs
        contexts = [_context_from_run(candidates, run, wide.probabilities, lead)
                    for run, lead in zip(runs, run_leads(candidates.sentences, runs))]
        yield from self._fill_text(contexts)
        passages = [_passage_within(c, options.rerank_tokens) for c in contexts]
        scores = self.reranker.score(candidates.query, passages)
        folded = fold_reranker_scores(wide.probabilities, [(r.start, r.end) for r in runs], scores)
        chosen = choose_segments(candidates.sentences, query_idf=candidates.query_idf, background=candidates.background, budget=budget,
                                 max_segments=options.k, sentence_floor=options.sentence_floor,
                                 probabilities=folded, relevance=selection.relevance,
                                 window=_fixed_window(options))
        trace = [{"document_id": c.citation.document_id, "first_ordinal": c.citation.first_ordinal,
                  "last_ordinal": c.citation.last_ordinal, "score": float(score)} for c, score in zip(contexts, scores)]
        return chosen, trace

    def _window_steps(self, query: str, options: PipelineOptions, *, filters: dict[str, Any] | None,
                      collection: str | None) -> Steps[PipelineResult]:
        started = time.perf_counter()
        timings: dict[str, float] = {}
        rse_params = get_params(options.rse) if options.rse is not None else None
        wanted = max(options.rerank_candidates if (options.rerank or rse_params) else options.k, options.k)
        # Asked for more windows than it returns (to rerank), the SQL walk would merge ever more
        # hits into ever bigger windows; it is held to that many windows' worth of sentences.
        budget = options.max_sentences or (min(wanted * (2 * options.window + 1), LIMITS["max_sentences"].high)
                                           if wanted > options.k else None)
        retrieved = yield from self.retriever.search_steps(
            query,
            SearchOptions(k=wanted, window=options.window, mode=options.mode,
                          candidates=options.candidates, clamp=options.clamp, rrf_k=options.rrf_k,
                          ef_search=options.ef_search, max_sentences=budget),
            filters=filters, collection=collection,
        )
        timings.update(retrieved.timings_ms)
        windows = [_Window(context=c, retrieval_rank=i) for i, c in enumerate(retrieved.contexts)]

        mark = time.perf_counter()
        yield from self._attach_sentences(windows)
        vanished = sum(not w.sentences for w in windows)  # their document replaced or deleted meanwhile
        windows = [w for w in windows if w.sentences]
        timings["fetch_ms"] = (time.perf_counter() - mark) * 1000

        mark = time.perf_counter()
        if options.rerank and windows:
            read = min(options.rerank_tokens or self.reranker.max_length, self.reranker.max_length)
            count = rerank_count([min(w.context.token_count, read) for w in windows],
                                 budget=options.rerank_token_budget, minimum=options.k)
            windows = windows[:count]  # the rest are never scored
            passages = [rerank_passage(w.context, w.sentences, options.rerank_tokens) for w in windows]
            scores = self.reranker.score(retrieved.query, passages)
            for window, score in zip(windows, scores):
                window.score = float(score)
            windows.sort(key=lambda w: (-w.score, w.retrieval_rank))
        else:
            best = max((w.context.score for w in windows), default=1.0) or 1.0
            for window in windows:
                window.score = window.context.score / best
        timings["rerank_ms"] = (time.perf_counter() - mark) * 1000

        mark = time.perf_counter()
        rse_trace = None
        if rse_params is not None:
            contexts, rse_trace = self._rse(windows, rse_params, options)
        else:
            contexts = [self._context_from_window(w) for w in windows[: options.k]]
        timings["rse_ms"] = (time.perf_counter() - mark) * 1000

        mark = time.perf_counter()
        contexts = order_contexts(contexts, order="score")
        notes = list(retrieved.notes) + _changed_notes(vanished) + _rerank_option_notes(options)
        if wanted > options.k and len(retrieved.contexts) >= options.k:
            # the pool asked of the retriever for reranking or RSE; k contexts were there to choose from
            notes = [n for n in notes if not n.startswith(f"{len(retrieved.contexts)} contexts for k={wanted}:")]
        if options.selection != "windows":  # rse= runs over fixed windows only (steps())
            notes.append(f"rse={options.rse!r} runs over fixed windows: selection 'windows' was used, not "
                         f"{options.selection!r} (which chooses runs of sentences within token_budget itself; "
                         "leave rse unset for it)")
        if options.token_budget is None and sum(c.token_count for c in contexts) > MAX_RETURNED_TOKENS:
            notes.append(f"the contexts were cut to {MAX_RETURNED_TOKENS} tokens (limit token_budget; set a token budget)")
        contexts = apply_token_budget(contexts, budget=options.token_budget or MAX_RETURNED_TOKENS, trim=self._trim)
        contexts = order_contexts(contexts, order=options.order)
        kept = yield from self._fill_text(contexts)
        notes.extend(_changed_notes(len(contexts) - len(kept)))
        contexts = kept
        if retrieved.count_tokens is not None:
            contexts = fit_token_budget(contexts, budget=options.token_budget or MAX_RETURNED_TOKENS,
                                        count_tokens=retrieved.count_tokens)
        timings["assemble_ms"] = (time.perf_counter() - mark) * 1000
        timings["total_ms"] = (time.perf_counter() - started) * 1000

        trace = {
            "options": {**asdict(options), "selection": "windows", "rse": asdict(rse_params) if rse_params else None,
                        "filters": filters},
            "retrieval": [_window_trace(w) for w in sorted(windows, key=lambda w: w.retrieval_rank)],
            "rerank": ([{"retrieval_rank": w.retrieval_rank, "document_id": w.context.document_id,
                         "first_ordinal": w.context.first_ordinal, "score": w.score} for w in windows]
                       if options.rerank else None),
            "rse": rse_trace,
            "contexts": [{"document_id": c.citation.document_id, "first_ordinal": c.citation.first_ordinal,
                          "last_ordinal": c.citation.last_ordinal, "tokens": c.token_count, "score": c.score}
                         for c in contexts],
            "timings_ms": {key.removesuffix("_ms"): round(value, 2) for key, value in timings.items()},
            "notes": notes,  # what the caller should know: fewer contexts than k, a cap, a filter matching nothing
        }
        abstain = None
        if not contexts:
            abstain = ("no RSE segment reached minimum_segment_value" if rse_params is not None and windows
                       else "no sentence matched the query" if not windows else "no context fits the token budget")
        trace["abstain"] = abstain
        return PipelineResult(query=retrieved.query, contexts=contexts, trace=trace, abstained=abstain is not None)

    # -- stages -------------------------------------------------------------------------------

    def _attach_sentences(self, windows: list[_Window]) -> Steps[None]:
        if not windows:
            return
        rows = yield Statement(load_sql("segment_sentences"), {
            "documents": [w.context.document_key for w in windows],
            "firsts": [w.context.first_ordinal for w in windows],
            "lasts": [w.context.last_ordinal for w in windows],
        })
        by_document: dict[int, dict[int, SentenceInfo]] = {}
        for doc, ordinal, start, end, tokens, section, page, section_path in rows:
            by_document.setdefault(doc, {})[ordinal] = SentenceInfo(ordinal, start, end, tokens, section, page,
                                                                    tuple(section_path or ()))
        for window in windows:
            sentences = by_document.get(window.context.document_key, {})
            window.sentences = [sentences[o] for o in range(window.context.first_ordinal, window.context.last_ordinal + 1)
                                if o in sentences]

    def _rse(self, windows: list[_Window], params: RSEParams, options: PipelineOptions):
        """Sentence values over all candidate windows; best segments; contexts from segments."""
        values: list[float] = []
        groups: list[int] = []
        owners: list[tuple[_Window, SentenceInfo]] = []
        # Windows never overlap, so each sentence is valued once; each window is its own group
        # (windows of one section that touched were already merged in SQL).
        for rank, window in enumerate(windows):
            ordinals = [s.ordinal for s in window.sentences]
            hits = [h.sentence_ordinal for h in window.context.hits]
            relevance = window_sentence_relevance(
                ordinals, hits, window_score=window.score, rank=rank,
                decay_rate=params.decay_rate, proximity_scale=options.proximity_scale)
            for sentence, value in zip(window.sentences, relevance):
                values.append(float(value) - params.irrelevant_sentence_penalty)
                groups.append(rank)
                owners.append((window, sentence))
        if not values:
            return [], {"segments": [], "sentences_valued": 0}
        segments = best_segments(
            np.asarray(values), groups=np.asarray(groups),
            max_segment_length=params.max_segment_length, overall_max_length=params.overall_max_length,
            minimum_segment_value=params.minimum_segment_value, segment_cost=params.segment_cost)
        # RSE decides WHAT to send; the order follows each segment's score (a sum of values would
        # favour long segments over short, sharper ones): the cross-encoder's of its window, or
        # without it, as a window's, its own best hit's rrf_score over the best window's (found by a
        # tester: every segment cut from one window had the window's score, a segment without the
        # window's best hit ranked first).
        best = max((w.context.score for w in windows), default=1.0) or 1.0

        def segment_score(segment) -> float:
            window = owners[segment.start][0]
            if options.rerank:
                return window.score
            ordinals = {owners[i][1].ordinal for i in range(segment.start, segment.end)}
            return max((h.rrf_score for h in window.context.hits if h.sentence_ordinal in ordinals), default=0.0) / best

        scored = sorted(((segment_score(s), s) for s in segments), key=lambda pair: (-pair[0], -pair[1].value))
        contexts = []
        for score, segment in scored[: options.k]:
            window = owners[segment.start][0]
            chosen = [owners[i][1] for i in range(segment.start, segment.end)]
            contexts.append(self._context_from_window(window, sentences=chosen, score=score))
        trace = {
            "sentences_valued": len(values),
            "segments": [{"document_id": owners[s.start][0].context.document_id,
                          "first_ordinal": owners[s.start][1].ordinal, "last_ordinal": owners[s.end - 1][1].ordinal,
                          "value": round(s.value, 4)} for s in segments],
        }
        return contexts, trace

    def _context_from_window(self, window: _Window, *, sentences: Sequence[SentenceInfo] | None = None,
                             score: float | None = None) -> AssembledContext:
        chosen = list(sentences if sentences is not None else window.sentences)
        first, last = chosen[0], chosen[-1]
        c = window.context
        hits = [asdict(h) for h in c.hits if first.ordinal <= h.sentence_ordinal <= last.ordinal]
        pages = tuple(sorted({s.page for s in chosen if s.page is not None}))
        path = tuple(c.section_path) if sentences is None else run_section_path(chosen, tuple(c.section_path))
        citation = Citation(document_id=c.document_id, title=c.title, section_path=path,
                            start_char=first.start_char, end_char=last.end_char,
                            first_ordinal=first.ordinal, last_ordinal=last.ordinal, pages=pages)
        return AssembledContext(citation=citation, text="", score=window.score if score is None else score,
                                token_count=sum(s.token_count for s in chosen), document_key=c.document_key,
                                sentences=chosen, hits=hits)

    def _trim(self, context: AssembledContext, budget: int) -> AssembledContext | None:
        anchors = {h["sentence_ordinal"] for h in context.hits}
        span = fit_sentences(context.sentences, budget=budget, anchors=anchors)
        if span is None:
            return None
        chosen = context.sentences[span[0]: span[1] + 1]
        first, last = chosen[0], chosen[-1]
        citation = Citation(**{**asdict(context.citation), "start_char": first.start_char, "end_char": last.end_char,
                               "first_ordinal": first.ordinal, "last_ordinal": last.ordinal,
                               "section_path": run_section_path(chosen, context.citation.section_path),
                               "pages": tuple(sorted({s.page for s in chosen if s.page is not None}))})
        hits = [h for h in context.hits if first.ordinal <= h["sentence_ordinal"] <= last.ordinal]
        return AssembledContext(citation=citation, text="", score=context.score,
                                token_count=sum(s.token_count for s in chosen), document_key=context.document_key,
                                sentences=list(chosen), hits=hits)

    def _fill_text(self, contexts: list[AssembledContext]) -> Steps[list[AssembledContext]]:
        """Read each context's text (one statement); the contexts whose document was replaced or
        deleted since the search read it are left out of the list returned (their text is gone;
        paired in order, the other texts shifted onto the wrong contexts)."""
        if not contexts:
            return []
        leads = [(c.document_key, c.citation.lead_start_char, c.citation.lead_end_char) for c in contexts
                 if c.citation.lead_start_char is not None]
        rows = yield text_slices([(c.document_key, c.citation.start_char, c.citation.end_char)
                                  for c in contexts] + leads)
        texts = dict(rows)
        lead_position = len(contexts)
        for position, context in enumerate(contexts, start=1):
            if context.citation.lead_start_char is not None:
                lead_position += 1
                context.lead = texts.get(lead_position, "") + LEAD_SEPARATOR
            context.text = context.lead + texts.get(position, "")
        return [c for position, c in enumerate(contexts, start=1) if position in texts]


def _changed_notes(left_out: int) -> list[str]:
    return ([f"{left_out} context(s) left out: their document was replaced or deleted during the search"]
            if left_out else [])


def text_slices(ranges: Sequence[tuple[int, int, int]]) -> Statement:
    """The text of (document key, start_char, end_char) ranges, one row each, in order."""
    return Statement(load_sql("document_slices"), {"documents": [r[0] for r in ranges],
                                                   "starts": [r[1] for r in ranges], "ends": [r[2] for r in ranges]})


def _fixed_window(options: PipelineOptions) -> int | None:
    """value_windows: the ±window around each valued sentence (RSE off); segments: None (RSE)."""
    return options.window if options.selection == "value_windows" else None


def _context_from_run(candidates: Candidates, run: Run, probabilities: np.ndarray,
                      lead: Lead | None = None) -> AssembledContext:
    """A chosen run of candidate sentences as a cited context, sent with LEAD in front (a list's
    lead-in, a table's header row: select.run_leads); its score is the probability that it holds
    evidence, 1 − Π(1 − p) over its sentences."""
    chosen = candidates.sentences[run.start:run.end]
    first, last = chosen[0], chosen[-1]
    planned = first.lead  # the selection counted it in the run's tokens
    tokens = run.tokens - (planned.tokens if planned is not None and lead is None else 0)
    external_id, title = candidates.documents[first.document_key]
    sentences = [SentenceInfo(c.ordinal, c.start_char, c.end_char, c.token_count, c.section_id, c.page,
                              tuple(candidates.section_paths[c.section_id])) for c in chosen]
    hits = [asdict(candidates.hits[(c.document_key, c.ordinal)]) for c in chosen
            if (c.document_key, c.ordinal) in candidates.hits]
    citation = Citation(document_id=external_id, title=title, section_path=run_section_path(sentences, ()),
                        start_char=first.start_char, end_char=last.end_char, first_ordinal=first.ordinal,
                        last_ordinal=last.ordinal,
                        pages=tuple(sorted({s.page for s in sentences if s.page is not None})),
                        lead_start_char=None if lead is None else lead.start_char,
                        lead_end_char=None if lead is None else lead.end_char)
    score = float(1.0 - np.prod(1.0 - probabilities[run.start:run.end]))
    return AssembledContext(citation=citation, text="", score=score, token_count=tokens,
                            document_key=first.document_key, sentences=sentences, hits=hits)


def _passage_within(context: AssembledContext, max_tokens: int | None) -> str:
    """What the cross-encoder reads of a chosen run: whole sentences around its best hit within
    MAX_TOKENS (the run itself when it fits)."""
    if max_tokens is None or context.token_count <= max_tokens:
        return context.text
    anchors = {h["sentence_ordinal"] for h in context.hits}
    span = fit_sentences(context.sentences, budget=max_tokens, anchors=anchors) or (0, 0)
    first, last = context.sentences[span[0]], context.sentences[span[1]]
    offset = context.citation.start_char - len(context.lead)
    return context.lead + context.text[first.start_char - offset: last.end_char - offset]


def rerank_count(tokens: Sequence[int], *, budget: int | None, minimum: int) -> int:
    """How many windows (in retrieval order) the cross-encoder scores: those whose running token
    total stays within BUDGET, but never fewer than MINIMUM (nor more than there are)."""
    if budget is None:
        return len(tokens)
    count, used = 0, 0
    for count, size in enumerate(tokens, start=1):
        used += size
        if used > budget:
            count -= 1
            break
    return min(len(tokens), max(count, minimum))


def rerank_passage(context: Context, sentences: Sequence[SentenceInfo], max_tokens: int | None) -> str:
    """What the cross-encoder reads of a window: whole sentences around its hits within
    MAX_TOKENS (the hit sentence alone when even that is longer; the model truncates it)."""
    if max_tokens is None or sum(s.token_count for s in sentences) <= max_tokens:
        return context.text
    anchors = {h.sentence_ordinal for h in context.hits}
    span = fit_sentences(sentences, budget=max_tokens, anchors=anchors)
    if span is None:
        hit = next((i for i, s in enumerate(sentences) if s.ordinal in anchors), len(sentences) // 2)
        span = (hit, hit)
    first, last = sentences[span[0]], sentences[span[1]]
    return context.text[first.start_char - context.start_char: last.end_char - context.start_char]


def _window_trace(window: _Window) -> dict[str, Any]:
    c = window.context
    return {"rank": window.retrieval_rank, "document_id": c.document_id, "section_path": c.section_path,
            "first_ordinal": c.first_ordinal, "last_ordinal": c.last_ordinal, "rrf_score": c.score,
            "tokens": c.token_count, "merged_hits": len(c.hits), "hits": [asdict(h) for h in c.hits]}


def _ignored_option_notes(options: PipelineOptions) -> list[str]:
    """Options of the fixed windows asked of a selection that does not use them (this path serves
    'segments' and 'value_windows'): say so rather than ignore them silently."""
    notes = []
    if options.selection == "segments" and options.window != DEFAULT_WINDOW:
        notes.append(f"window={options.window} applies to selection 'windows' or 'value_windows'; the default "
                     "selection ('segments') sends the most valuable runs of sentences within token_budget")
    if options.max_sentences is not None:
        notes.append(f"max_sentences={options.max_sentences} applies to selection 'windows'; selection "
                     f"{options.selection!r} is held by token_budget")
    return notes + _rerank_option_notes(options)


def _rerank_option_notes(options: PipelineOptions) -> list[str]:
    """The cross-encoder's settings given while it is off."""
    if options.rerank:
        return []
    defaults = PipelineOptions()
    given = [f"{name}={getattr(options, name)}" for name in ("rerank_candidates", "rerank_tokens", "rerank_token_budget")
             if getattr(options, name) != getattr(defaults, name)]
    return [f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} with rerank=True (the cross-encoder is off)"
            ] if given else []

