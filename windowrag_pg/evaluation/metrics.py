"""Retrieval metrics over character ranges: pure Python, no I/O.

A retrieval result is a ranked list of :class:`ContextSpan` - a piece of one document given
by its character range (0-based, end exclusive, as everywhere in windowrag_pg) - and the
truth is a list of :class:`GoldSpan` (the evidence) and/or answer strings. Working on
ranges rather than chunk ids lets one benchmark compare chunking, sentence windows and RSE
segments, whatever their unit.

Per-query metrics return ``None`` when they cannot be measured (no gold); :func:`aggregate`
averages over the queries where they could.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real

__all__ = [
    "ContextSpan",
    "GoldSpan",
    "aggregate",
    "ann_recall_at_k",
    "answer_hit_at_k",
    "duplicated_chars",
    "duplicated_tokens",
    "evidence_recall_at_k",
    "hit_at_k",
    "normalize_answer_text",
    "percentile",
    "reciprocal_rank",
    "wrong_section_at_1",
]


@dataclass(frozen=True, slots=True)
class ContextSpan:
    """One retrieved context: ``text`` is document ``doc_id``'s ``[start_char, end_char)``."""

    doc_id: Hashable
    start_char: int
    end_char: int
    text: str = ""

    def __post_init__(self) -> None:
        if not 0 <= self.start_char <= self.end_char:
            raise ValueError(f"bad context range [{self.start_char}, {self.end_char})")

    def holds(self, gold: GoldSpan) -> bool:
        """The whole gold span lies inside this context (edges included)."""
        return (
            self.doc_id == gold.doc_id
            and self.start_char <= gold.start
            and gold.end <= self.end_char
        )


@dataclass(frozen=True, slots=True)
class GoldSpan:
    """Evidence for a query: document ``doc_id``'s characters ``[start, end)``."""

    doc_id: Hashable
    start: int
    end: int

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"bad gold range [{self.start}, {self.end})")


def _first(contexts: Sequence[ContextSpan], k: int | None) -> Sequence[ContextSpan]:
    if k is None:
        return contexts
    if k < 0:
        raise ValueError("k must be >= 0")
    return contexts[:k]


def _merge(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Union of half-open ranges as sorted, disjoint, non-touching ranges."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if start >= end:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """Characters in both unions (each sorted and disjoint): a two-pointer sweep."""
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        total += max(0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return total


# --------------------------------------------------------------------------------------------
# Per-query metrics
# --------------------------------------------------------------------------------------------


def hit_at_k(contexts: Sequence[ContextSpan], gold: Sequence[GoldSpan], k: int) -> float | None:
    """1.0 if one of the first ``k`` contexts holds some gold span whole, else 0.0.

    Whole, not overlapping: half of the evidence is often not enough to answer, and partial
    coverage is what :func:`evidence_recall_at_k` measures. ``None`` when there is no gold.
    """
    if not gold:
        return None
    top = _first(contexts, k)
    return 1.0 if any(c.holds(g) for c in top for g in gold) else 0.0


def reciprocal_rank(
    contexts: Sequence[ContextSpan], gold: Sequence[GoldSpan], k: int | None = None
) -> float | None:
    """1 / rank (1-based) of the first context holding a gold span whole; 0.0 if none does.

    ``k`` optionally cuts the list (MRR@k). ``None`` when there is no gold.
    """
    if not gold:
        return None
    for rank, context in enumerate(_first(contexts, k), start=1):
        if any(context.holds(g) for g in gold):
            return 1.0 / rank
    return 0.0


def evidence_recall_at_k(
    contexts: Sequence[ContextSpan], gold: Sequence[GoldSpan], k: int
) -> float | None:
    """Share of gold characters covered by the first ``k`` contexts.

    Both sides are unions per document, so overlapping gold spans (or overlapping contexts)
    are not counted twice. ``None`` when there is no gold or the gold spans are all empty.
    """
    gold_by_doc: dict[Hashable, list[tuple[int, int]]] = defaultdict(list)
    for g in gold:
        gold_by_doc[g.doc_id].append((g.start, g.end))
    context_by_doc: dict[Hashable, list[tuple[int, int]]] = defaultdict(list)
    for c in _first(contexts, k):
        context_by_doc[c.doc_id].append((c.start_char, c.end_char))
    gold_chars = covered = 0
    for doc_id, ranges in gold_by_doc.items():
        gold_union = _merge(ranges)
        gold_chars += sum(end - start for start, end in gold_union)
        if doc_id in context_by_doc:
            covered += _overlap(gold_union, _merge(context_by_doc[doc_id]))
    if gold_chars == 0:
        return None
    return covered / gold_chars


def wrong_section_at_1(first_section: ContextSpan | None, gold: Sequence[GoldSpan]) -> float | None:
    """1.0 if the section the first context comes from holds no gold span, else 0.0.

    ``first_section`` is that section's character range in its document - the whole document
    when the context carries no section (a chunk may cross sections). A section holds a gold
    span when they share a character (an empty gold span: when its position lies in the
    section). Pointing the reader at the wrong place is worse than missing: this counts it.
    ``None`` when there is no gold or no context (abstentions count in the abstain rate).
    """
    if not gold or first_section is None:
        return None
    s = first_section
    for g in gold:
        if g.doc_id != s.doc_id:
            continue
        if g.start == g.end:
            if s.start_char <= g.start <= s.end_char:
                return 0.0
        elif g.start < s.end_char and s.start_char < g.end:
            return 0.0
    return 1.0


_WHITESPACE = re.compile(r"\s+")


def normalize_answer_text(text: str) -> str:
    """Case-fold and fold every whitespace run to one space (then strip the ends)."""
    return _WHITESPACE.sub(" ", text.casefold()).strip()


def answer_hit_at_k(
    contexts: Sequence[ContextSpan], answers: Sequence[str], k: int
) -> float | None:
    """1.0 if one of the answer strings occurs in one of the first ``k`` context texts.

    Both sides go through :func:`normalize_answer_text`, so "New  York" matches "new york"
    and an answer split across a line break still matches. Answers that are empty after
    normalising are ignored (they would match anything); ``None`` when none is left.
    """
    wanted = {a for a in (normalize_answer_text(x) for x in answers) if a}
    if not wanted:
        return None
    for context in _first(contexts, k):
        text = normalize_answer_text(context.text)
        if any(a in text for a in wanted):
            return 1.0
    return 0.0


# --------------------------------------------------------------------------------------------
# Redundancy
# --------------------------------------------------------------------------------------------


def _coverage_counts(
    contexts: Sequence[ContextSpan],
) -> dict[Hashable, list[tuple[int, int, int]]]:
    """Per document, the pieces ``(start, end, how many contexts cover them)``, sweep-line."""
    events: dict[Hashable, list[tuple[int, int]]] = defaultdict(list)
    for c in contexts:
        if c.start_char < c.end_char:
            events[c.doc_id].append((c.start_char, 1))
            events[c.doc_id].append((c.end_char, -1))
    pieces: dict[Hashable, list[tuple[int, int, int]]] = {}
    for doc_id, doc_events in events.items():
        doc_events.sort()
        depth, previous, doc_pieces = 0, None, []
        for position, delta in doc_events:
            if previous is not None and position > previous and depth > 0:
                doc_pieces.append((previous, position, depth))
            depth += delta
            previous = position
        pieces[doc_id] = doc_pieces
    return pieces


def duplicated_chars(contexts: Sequence[ContextSpan]) -> int:
    """Characters of a document covered by more than one context (each counted once).

    The same text shown twice costs tokens and tells the model nothing new; contexts built
    by windowrag_pg are merged per document, so this must be 0 for them.
    """
    return sum(
        end - start
        for doc_pieces in _coverage_counts(contexts).values()
        for start, end, depth in doc_pieces
        if depth > 1
    )


def duplicated_tokens(contexts: Sequence[ContextSpan], token_counts: Sequence[int]) -> float:
    """Estimated tokens spent on repeated text, given each context's token count.

    Every character beyond its first showing is redundant; each context's redundant
    characters are converted at that context's own tokens-per-character rate. Which copy is
    the "first" is decided by rank: a character's first showing is in the best-ranked context
    that covers it. An estimate - exact only if tokens are spread evenly over the text.
    """
    if len(token_counts) != len(contexts):
        raise ValueError("one token count per context is needed")
    seen: dict[Hashable, list[tuple[int, int]]] = defaultdict(list)
    total = 0.0
    for context, tokens in zip(contexts, token_counts):
        size = context.end_char - context.start_char
        if size == 0:
            continue
        mine = [(context.start_char, context.end_char)]
        repeated = _overlap(mine, _merge(seen[context.doc_id]))
        total += tokens * repeated / size
        seen[context.doc_id].append(mine[0])
    return total


def ann_recall_at_k(found: Sequence[Hashable], exact: Sequence[Hashable], k: int, *,
                    leave_out: Hashable | None = None) -> float:
    """Share of the exact K nearest rows that an approximate search found among its first K, both
    lists best first, without LEAVE_OUT (a row asked as its own query, which both find first)."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, not {k!r}")
    truth = [row for row in exact if row != leave_out][:k]
    if not truth:
        raise ValueError("the exact search found no row to compare with")
    returned = [row for row in found if row != leave_out][:k]
    return len(set(truth) & set(returned)) / len(truth)


# --------------------------------------------------------------------------------------------
# Aggregation
# --------------------------------------------------------------------------------------------


def percentile(values: Iterable[float | None], p: float) -> float | None:
    """The p-th percentile (0..100) with linear interpolation (numpy's default), ignoring
    ``None`` and NaN; ``None`` for no values."""
    if not 0 <= p <= 100:
        raise ValueError("p must be in [0, 100]")
    data = sorted(float(v) for v in values if v is not None and not math.isnan(v))
    if not data:
        return None
    position = (len(data) - 1) * p / 100
    below = math.floor(position)
    above = min(below + 1, len(data) - 1)
    return data[below] + (data[above] - data[below]) * (position - below)


DISTRIBUTION_KEYS = ("latency_ms", "tokens")


def aggregate(
    rows: Sequence[Mapping[str, object]],
    *,
    distribution_keys: Sequence[str] = DISTRIBUTION_KEYS,
) -> dict[str, float | int | None]:
    """Summarise per-query rows (``{"hit@5": 1.0, "rr": 0.5, "latency_ms": 12.3, ...}``).

    Every numeric key becomes its mean over the rows where it is not ``None`` (``None`` if
    it never is), with ``"<key>_n"`` = how many rows counted. Keys in ``distribution_keys``
    also get ``"<key>_p50"`` and ``"<key>_p95"``. Keys that hold anything else (query ids,
    texts) are left out. ``"queries"`` is the number of rows.
    """
    samples: dict[str, list[float]] = {}
    text_keys: set[str] = set()
    for row in rows:
        for key, value in row.items():
            if isinstance(value, Real):  # bool, int, float and numpy scalars
                if not math.isnan(value):
                    samples.setdefault(key, []).append(float(value))
                    continue
                value = None
            if value is None:
                samples.setdefault(key, [])
            else:
                text_keys.add(key)
    summary: dict[str, float | int | None] = {"queries": len(rows)}
    for key in sorted(samples.keys() - text_keys):
        present = samples[key]
        summary[key] = sum(present) / len(present) if present else None
        summary[f"{key}_n"] = len(present)
        if key in distribution_keys:
            summary[f"{key}_p50"] = percentile(present, 50)
            summary[f"{key}_p95"] = percentile(present, 95)
    return summary
