"""Retriever: a query → merged, section-clamped sentence windows, or the candidate sentences
around the hits with their signals, in one round trip each.

The work happens in SQL (sql/functions.sql: windowrag.search_windows and
windowrag.candidate_sentences); this class embeds the query, compiles filters and turns rows
into values (Context, CandidateSentence).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from ..assemble.context import Citation
from ..db.source import connection_source
from ..db.statements import Statement, Steps, run_steps
from ..db.sqlfiles import load_sql
from ..embed import embedder_of_collection
from ..embed.background import background_similarity
from ..embed.base import Embedder
from ..limits import LIMITS, first_problem, problem
from ..parse import has_visible_text
from ..segment.values import CandidateSentence, Lead
from ..store.collections import Collection, collection_from_row
from ..store.documents import unmatched_filter_steps
from .filters import compile_filters

MODES = ("hybrid", "dense", "bm25")
CLAMPS = ("section", "document")
MAX_QUERY_CHARS = LIMITS["query_chars"].high


class QueryError(ValueError):
    """A query or option the retriever cannot run; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Hit:
    sentence_ordinal: int
    dense_rank: int | None
    bm25_rank: int | None
    rrf_score: float


@dataclass(slots=True)
class Context:
    document_id: str  # the document's external id
    title: str | None
    section_path: list[str]
    start_char: int
    end_char: int
    text: str
    score: float
    hits: list[Hit]
    first_ordinal: int
    last_ordinal: int
    token_count: int
    document_key: int = 0  # internal windowrag.documents.id

    @property
    def citation(self) -> Citation:
        """Its citation, as a pipeline's contexts carry it (format_context reads it)."""
        return Citation(document_id=self.document_id, title=self.title, section_path=tuple(self.section_path),
                        start_char=self.start_char, end_char=self.end_char, first_ordinal=self.first_ordinal,
                        last_ordinal=self.last_ordinal)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("document_key")
        return data


@dataclass(slots=True)
class SearchResult:
    query: str
    contexts: list[Context]
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # why fewer than k contexts came back, …
    count_tokens: Callable[[Sequence[str]], list[int]] | None = None  # as Candidates

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "contexts": [c.as_dict() for c in self.contexts]}


@dataclass(slots=True)
class Candidates:
    """The sentences that could be sent for a query (document order), with what citing them needs."""

    query: str
    sentences: list[CandidateSentence]
    documents: dict[int, tuple[str, str | None]]  # document key -> (external id, title)
    section_paths: dict[int, list[str]]  # section id -> heading path
    hits: dict[tuple[int, int], Hit]  # (document key, ordinal) -> its fused ranks
    query_idf: float = 0.0  # idf mass of all the query's lexemes (unknown ones as the rarest)
    # the query's mean cosine to everyday text (embed/background.py); None when not embedded here
    background: float | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # a filter that matches no document, …
    # the collection's tokenizer (its embedder's), which counted the sentences' tokens at ingest
    count_tokens: Callable[[Sequence[str]], list[int]] | None = None


@dataclass(frozen=True, slots=True)
class SearchOptions:
    k: int = 5
    window: int = 3
    mode: str = "hybrid"
    candidates: int = 20  # the SQL functions' default too (migration 0018)
    clamp: str = "section"
    rrf_k: int = 60
    dense_weight: float = 1.0
    bm25_weight: float = 1.0
    ef_search: int = 100
    k1: float = 1.2
    b: float = 0.75
    # sentences all segments may hold together (None: no budget; merged windows may grow)
    max_sentences: int | None = None
    # candidate_sentences: how far from a hit (sentences, within its section) a sentence may be sent
    radius: int = 6

    def check(self) -> None:
        if self.mode not in MODES:
            raise QueryError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.clamp not in CLAMPS:
            raise QueryError(f"clamp must be one of {', '.join(CLAMPS)}, not {self.clamp!r}")
        found = first_problem(k=self.k, candidates=self.candidates, ef_search=self.ef_search, rrf_k=self.rrf_k,
                              window=self.window, max_sentences=self.max_sentences)
        if found:
            raise QueryError(found)
        if not isinstance(self.radius, int) or isinstance(self.radius, bool) or not 0 <= self.radius <= 1000:
            raise QueryError(f"radius must be an integer between 0 and 1000, not {self.radius!r}")
        for name in ("dense_weight", "bm25_weight", "k1", "b"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise QueryError(f"{name} must be a finite non-negative number, not {value!r}")


class Retriever:
    """Search one database. Queries are embedded by the model each collection was embedded with
    (read back from its model_id), or by EMBEDDER, which must be that model.

    CONN: a psycopg Connection, a psycopg_pool ConnectionPool or a URL (windowrag_pg.db.source);
    a pooled connection is held only while a statement runs, never while the model embeds.
    """

    def __init__(self, conn: psycopg.Connection | Any, *, embedder: Embedder | None = None,
                 collection: str = "default") -> None:
        self.source = connection_source(conn)
        # None: each collection's queries are embedded by the model it was embedded with
        self._embedder = embedder
        self._models: dict[str, Embedder] = {}  # by model_id, loaded on first use
        self.collection_name = collection
        self._collections: dict[str, Collection] = {}

    def embedder_for(self, target: Collection) -> Embedder:
        """The embedder given, else the collection's own model (read back from its model_id)."""
        if self._embedder is not None:
            return self._embedder
        model_id = target.embedding_model
        if model_id not in self._models:
            self._models[model_id] = embedder_of_collection(target.name, model_id, error=QueryError, owner="Pipeline")
        return self._models[model_id]

    def collection(self, name: str | None = None) -> Collection:
        return run_steps(self.collection_steps(name), self.source)

    def collection_steps(self, name: str | None = None) -> Steps[Collection]:
        name = name or self.collection_name
        if name not in self._collections:
            rows = yield Statement(load_sql("get_collection"), [name])
            self._collections[name] = collection_from_row(name, rows[0] if rows else None)
        return self._collections[name]

    def _replaced_steps(self, target: Collection) -> Steps[bool]:
        """Whether the collection called target.name is another one now (`windowrag reembed` swaps in a
        new collection, perhaps of another model; or it was deleted and made again): then the
        cached one is read again. Asked only when a search returned nothing, which the statements
        do when the name's collection is not target (a long-lived pipeline would otherwise embed
        its queries with the old model, and search the new vectors with them)."""
        rows = yield Statement(load_sql("get_collection"), [target.name])
        current = collection_from_row(target.name, rows[0] if rows else None)
        if current.id == target.id:
            return False
        self._collections[target.name] = current
        return True

    def search(
        self,
        query: str,
        *,
        k: int = 5,
        window: int = 3,
        mode: str = "hybrid",
        filters: dict[str, Any] | None = None,
        candidates: int = 20,
        ef_search: int = 100,
        collection: str | None = None,
        clamp: str = "section",
        rrf_k: int = 60,
        dense_weight: float = 1.0,
        bm25_weight: float = 1.0,
        max_sentences: int | None = None,
        query_embedding: np.ndarray | None = None,
    ) -> SearchResult:
        options = SearchOptions(k=k, window=window, mode=mode, candidates=candidates, clamp=clamp,
                                rrf_k=rrf_k, dense_weight=dense_weight, bm25_weight=bm25_weight,
                                ef_search=ef_search, max_sentences=max_sentences)
        return self.search_with(query, options, filters=filters, collection=collection,
                                query_embedding=query_embedding)

    def search_with(self, query: str, options: SearchOptions, *, filters: dict[str, Any] | None = None,
                    collection: str | None = None, query_embedding: np.ndarray | None = None) -> SearchResult:
        return run_steps(self.search_steps(query, options, filters=filters, collection=collection,
                                           query_embedding=query_embedding), self.source)

    def search_steps(self, query: str, options: SearchOptions, *, filters: dict[str, Any] | None = None,
                     collection: str | None = None, query_embedding: np.ndarray | None = None) -> Steps[SearchResult]:
        """search_with as steps (windowrag_pg.db.statements): the statements it needs, yielded."""
        query, target, embedding, timings, notes = yield from self._prepare(query, options, collection,
                                                                           query_embedding)
        statement, params = build_search_statement(target, query, embedding, options, filters)
        rows = yield from _timed(Statement(statement, params, prepare=False), timings)
        if not rows and (yield from self._replaced_steps(target)):  # searched with a stale model: again
            return (yield from self.search_steps(query, options, filters=filters, collection=collection,
                                                 query_embedding=query_embedding))
        if filters and not rows:
            notes.extend((yield from unmatched_filter_steps(target, filters)))
        contexts = [_context(row) for row in rows]
        # Fewer windows than k although a candidate list was full: more candidates would give more.
        if len(contexts) < options.k and any(options.candidates in (h.dense_rank, h.bm25_rank)
                                             for c in contexts for h in c.hits):
            notes.append(f"{len(contexts)} contexts for k={options.k}: the best {options.candidates} sentences of "
                         f"each list made no more windows (raise candidates, up to {LIMITS['candidates'].high})")
        return SearchResult(query=query, contexts=contexts, timings_ms=timings, notes=notes,
                            count_tokens=self._token_counter(target))

    def candidates_with(self, query: str, options: SearchOptions, *, filters: dict[str, Any] | None = None,
                        collection: str | None = None, query_embedding: np.ndarray | None = None) -> Candidates:
        """Every sentence within options.radius of the best options.candidates fused hits."""
        return run_steps(self.candidates_steps(query, options, filters=filters, collection=collection,
                                               query_embedding=query_embedding), self.source)

    def candidates_steps(self, query: str, options: SearchOptions, *, filters: dict[str, Any] | None = None,
                         collection: str | None = None, query_embedding: np.ndarray | None = None) -> Steps[Candidates]:
        query, target, embedding, timings, notes = yield from self._prepare(query, options, collection,
                                                                           query_embedding)
        statement, params = build_search_statement(target, query, embedding, options, filters,
                                                   template="candidate_sentences")
        rows = yield from _timed(Statement(statement, params, prepare=False), timings)
        if not rows and (yield from self._replaced_steps(target)):  # searched with a stale model: again
            return (yield from self.candidates_steps(query, options, filters=filters, collection=collection,
                                                     query_embedding=query_embedding))
        count_tokens = self._token_counter(target)
        candidates = candidates_from_rows(query, rows, timings, count_tokens=count_tokens)
        candidates.notes.extend(notes)
        # only with the collection's own model (a caller's vector may come from elsewhere)
        own = self._embedder if self._embedder is not None else self._models.get(target.embedding_model)
        if embedding is not None and own is not None and own.model_id == target.embedding_model:
            candidates.background = background_similarity(own, embedding)
        if filters and not rows:
            candidates.notes.extend((yield from unmatched_filter_steps(target, filters)))
        candidates.count_tokens = count_tokens
        return candidates

    def _token_counter(self, target: Collection) -> Callable[[Sequence[str]], list[int]] | None:
        """The collection's tokenizer; None when its model cannot be loaded by name (an ONNX
        folder of one's own, with only a query embedding given)."""
        try:
            return self.embedder_for(target).count_tokens
        except QueryError:
            return None

    def _prepare(self, query: str, options: SearchOptions, collection: str | None,
                 query_embedding: np.ndarray | None) -> Steps[tuple]:
        """Checked query, its collection, its embedding (None for BM25 alone), timings so far and
        notes (a query longer than the embedder reads)."""
        options.check()
        query = check_query(query)
        target = yield from self.collection_steps(collection)
        timings: dict[str, float] = {}
        notes: list[str] = []
        started = time.perf_counter()
        embedding = None
        if options.mode != "bm25":
            if query_embedding is None:
                embedder = self.embedder_for(target)
                if embedder.model_id != target.embedding_model and (yield from self._replaced_steps(target)):
                    target = self._collections[target.name]  # re-embedded since it was read
                    embedder = self.embedder_for(target)
                if embedder.model_id != target.embedding_model:
                    raise QueryError(
                        f"collection {target.name!r} was embedded with {target.embedding_model!r}; "
                        f"this retriever's embedder is {embedder.model_id!r}"
                    )
                query_embedding = embedder.embed_query(query)
                notes.extend(filter(None, [embedder.query_truncation_note(query)]))
            embedding = check_embedding(query_embedding, target.dimension)
        timings["embed_ms"] = (time.perf_counter() - started) * 1000
        return query, target, embedding, timings, notes


def _timed(statement: Statement, timings: dict[str, float]) -> Steps[list]:
    started = time.perf_counter()
    rows = yield statement
    timings["sql_ms"] = (time.perf_counter() - started) * 1000
    return rows


def build_search_statement(collection: Collection, query: str, embedding: np.ndarray | None,
                           options: SearchOptions, filters: dict[str, Any] | None,
                           *, template: str = "search_windows"):
    condition, params = compile_filters(filters)
    if filters:
        document_ids = sql.SQL(load_sql("filtered_document_ids")).format(condition=condition)
    else:
        document_ids = sql.SQL("NULL")
    statement = sql.SQL(load_sql(template)).format(document_ids=document_ids)
    params.update(
        collection=collection.name, collection_id=collection.id, query=query, embedding=embedding, k=options.k,
        window=options.window,
        mode=options.mode, candidates=options.candidates, clamp=options.clamp, rrf_k=options.rrf_k,
        dense_weight=float(options.dense_weight), bm25_weight=float(options.bm25_weight),
        ef_search=options.ef_search, k1=float(options.k1), b=float(options.b),
        max_sentences=options.max_sentences, radius=options.radius,
    )
    return statement, params


def check_query(query: Any) -> str:
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(problem("query_chars", len(query)))
    if "\x00" in query:
        raise QueryError("query contains a NUL character")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as error:
        raise QueryError(f"query contains a lone surrogate at offset {error.start} (not valid Unicode text)") from None
    if not has_visible_text(query):
        raise QueryError("query is empty")
    return query


def check_embedding(vector: Any, dimension: int) -> np.ndarray:
    """The query vector as unit-length float32; refuses non-numbers, wrong shapes, NaN/inf, zero.

    Cosine ignores length, so scaling changes no ranking; it keeps pgvector's float32 arithmetic
    finite for huge or tiny components (whose squares overflow or underflow).
    """
    try:
        array = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise QueryError(f"query embedding must be a sequence of numbers ({exc})") from None
    if array.ndim != 1 or array.shape[0] != dimension:
        raise QueryError(f"query embedding has shape {array.shape}; the collection needs ({dimension},)")
    if not np.all(np.isfinite(array)):
        raise QueryError("query embedding holds NaN or infinite values")
    largest = float(np.max(np.abs(array)))
    if largest == 0.0:
        raise QueryError("query embedding is all zeros: it has no direction to compare")
    array = array / largest
    return (array / np.linalg.norm(array)).astype(np.float32)


def _context(row) -> Context:
    (_rank, doc_key, external_id, title, section_path, first, last, start, end, text, score, tokens, hits) = row
    return Context(
        document_id=external_id, title=title, section_path=list(section_path or []), start_char=start,
        end_char=end, text=text, score=float(score),
        hits=[Hit(h["sentence_ordinal"], h.get("dense_rank"), h.get("bm25_rank"), float(h["rrf_score"])) for h in hits],
        first_ordinal=first, last_ordinal=last, token_count=int(tokens or 0), document_key=doc_key,
    )


# gaps up to this many characters are tokenized; longer ones count the UTF-8 bytes of their
# non-space characters (candidates_from_rows)
MAX_COUNTED_GAP = 2_000


def _gap_token_counts(gaps: list[str], count_tokens: Callable[[Sequence[str]], list[int]] | None) -> list[int]:
    """Each gap's tokens, or its bound (candidates_from_rows), in one tokenizer call."""
    counted = {i: gap for i, gap in enumerate(gaps) if count_tokens is not None and len(gap) <= MAX_COUNTED_GAP}
    exact = dict(zip(counted, count_tokens(list(counted.values())))) if counted else {}
    return [exact[i] if i in exact else len("".join(gap.split()).encode("utf-8")) for i, gap in enumerate(gaps)]


def candidates_from_rows(query: str, rows, timings_ms: dict[str, float], *,
                         count_tokens: Callable[[Sequence[str]], list[int]] | None = None) -> Candidates:
    """Candidates from rows of sql/candidate_sentences.sql; their gaps' tokens counted by
    COUNT_TOKENS. A gap longer than MAX_COUNTED_GAP characters, or any gap without COUNT_TOKENS,
    counts the UTF-8 bytes of its characters that are not spaces: at least its tokens for
    WordPiece and byte-level BPE tokenizers (a token holds a byte or more), so the budget holds;
    and a 1 MB base64 image in raw HTML is not tokenized on every query."""
    # (…, gap, kind, lead_ordinal, lead_start_char, lead_end_char, lead_token_count)
    gap_tokens = iter(_gap_token_counts([row[20] for row in rows if row[20]], count_tokens))
    sentences: list[CandidateSentence] = []
    documents: dict[int, tuple[str, str | None]] = {}
    sections: dict[int, list[str]] = {}
    hits: dict[tuple[int, int], Hit] = {}
    query_idf = 0.0
    for (doc_key, external_id, title, section_id, section_path, ordinal, start, end, tokens, page, cosine,
         window_cosine, bm25, terms, idfs, fused_rank, dense_rank, bm25_rank, rrf_score, total_idf, gap, kind,
         lead_ordinal, lead_start, lead_end, lead_tokens) in rows:
        query_idf = float(total_idf or 0.0)
        documents[doc_key] = (external_id, title)
        sections[section_id] = list(section_path or [])
        sentences.append(CandidateSentence(
            document_key=doc_key, section_id=section_id, ordinal=ordinal, start_char=start, end_char=end,
            token_count=int(tokens), cosine=cosine, window_cosine=window_cosine, bm25=float(bm25),
            fused_rank=fused_rank, terms=tuple(zip(terms, idfs)), page=page,
            gap_tokens=next(gap_tokens) if gap else 0, kind=kind,
            # + 1: the line break after it, a token at most
            lead=None if lead_ordinal is None else Lead(lead_ordinal, lead_start, lead_end, int(lead_tokens) + 1)))
        if fused_rank is not None:
            hits[(doc_key, ordinal)] = Hit(ordinal, dense_rank, bm25_rank, float(rrf_score))
    return Candidates(query=query, sentences=sentences, documents=documents, section_paths=sections,
                      hits=hits, query_idf=query_idf, timings_ms=timings_ms)
