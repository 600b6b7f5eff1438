"""Relevant Segment Extraction (RSE): pure numpy, no I/O.

RSE turns a ranked list of retrieved sentences into a few contiguous *segments* of the
source text. Every sentence of the candidate documents gets a value::

    relevance = exp(-rank / decay_rate) * score        # retrieved sentences (rank is 0-based)
    value     = relevance - irrelevant_sentence_penalty  # retrieved
    value     = -irrelevant_sentence_penalty            # never retrieved

and we pick the set of segments that maximises the summed value subject to:

* segments do not overlap and never cross a group boundary (document, or section);
* each segment is at most ``max_segment_length`` sentences long;
* each segment is worth at least ``minimum_segment_value``;
* all segments together are at most ``overall_max_length`` sentences long.

The penalty is what makes a segment stop: every unretrieved sentence inside a segment
costs ``penalty``. Note what that means for the exact optimum: a gap between two pieces that
each clear the minimum is never worth bridging (the gap only costs), so the plain problem
returns the runs of hits apart and bridges gaps only to reach ``minimum_segment_value``.
dsRAG's greedy method does bridge them, because it maximises one segment at a time. The
optional ``segment_cost`` (charged once per segment; not in dsRAG, 0 by default) gives the
exact solver the same pull: it bridges gaps of up to ``segment_cost / penalty`` sentences.

The value model and the presets come from dsRAG (``dsrag/rse.py``, D-Star-AI/dsRAG, read at
commit 1336c8fa). dsRAG picks segments greedily (best single segment, then the best one
that still fits, ...); :func:`best_segments` instead solves the problem *exactly* with a
dynamic programme, and :func:`greedy_segments` reproduces the greedy method for comparison.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "PRESETS",
    "RSEParams",
    "Segment",
    "best_segments",
    "extract_segments",
    "get_params",
    "greedy_segments",
    "relevance_values",
    "segment_total",
    "sentence_values",
]


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class RSEParams:
    """Knobs of RSE. Lengths are counted in sentences (retrieval units).

    irrelevant_sentence_penalty: subtracted from every sentence's relevance. Higher gives
        shorter, tighter segments (dsRAG: 0.05 -> very long segments, 0.4 -> 1-3 units).
    max_segment_length: longest single segment.
    overall_max_length: budget for all segments together.
    minimum_segment_value: a segment worth less is dropped, so a query the corpus cannot
        answer gets no context at all instead of noise.
    decay_rate: rank at which the rank weight exp(-rank / decay_rate) has fallen to 1/e.
    top_k_for_document_selection: only documents holding one of the top-k retrieved
        sentences take part in RSE (None: every document with a retrieved sentence).
    segment_cost: charged once per segment by :func:`best_segments` (not part of dsRAG).
        Without it the exact optimum never bridges a gap between two segments that each
        clear the minimum (the gap only costs penalty), so it returns many short segments;
        with it, a gap of up to ``segment_cost / penalty`` unretrieved sentences is bridged.
    """

    irrelevant_sentence_penalty: float
    max_segment_length: int
    overall_max_length: int
    minimum_segment_value: float
    decay_rate: float
    top_k_for_document_selection: int | None = None
    segment_cost: float = 0.0

    def __post_init__(self) -> None:
        for name in (
            "irrelevant_sentence_penalty", "minimum_segment_value", "decay_rate", "segment_cost"
        ):
            if not np.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite")
        if self.decay_rate <= 0:
            raise ValueError("decay_rate must be > 0")
        for name in ("max_segment_length", "overall_max_length"):
            if int(getattr(self, name)) != getattr(self, name) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer")
        k = self.top_k_for_document_selection
        if k is not None and (int(k) != k or k < 1):
            raise ValueError("top_k_for_document_selection must be a positive integer or None")
        if self.segment_cost < 0:
            raise ValueError("segment_cost must be >= 0")

    def replace(self, **changes: object) -> RSEParams:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def segment_limits(self) -> dict[str, float | int]:
        """The keyword arguments of :func:`best_segments` / :func:`greedy_segments`."""
        return {
            "max_segment_length": self.max_segment_length,
            "overall_max_length": self.overall_max_length,
            "minimum_segment_value": self.minimum_segment_value,
            "segment_cost": self.segment_cost,
        }


# Values are dsRAG's RSE_PARAMS_PRESETS (dsrag/rse.py at commit 1336c8fa), renamed.
# dsRAG counts lengths in chunks of ~700 characters while we count sentences, so with the same
# numbers our segments are shorter in characters; these are starting points, not tuned values.
# Not carried over: overall_max_length_extension and chunk_length_adjustment (dsRAG scales the
# value of chunks longer than 700 characters; our units are sentences of roughly equal weight).
PRESETS: Mapping[str, RSEParams] = {
    "balanced": RSEParams(
        irrelevant_sentence_penalty=0.18,
        max_segment_length=15,
        overall_max_length=30,
        minimum_segment_value=0.5,
        decay_rate=30,
        top_k_for_document_selection=10,
    ),
    "precision": RSEParams(
        irrelevant_sentence_penalty=0.2,
        max_segment_length=15,
        overall_max_length=30,
        minimum_segment_value=0.7,
        decay_rate=30,
        top_k_for_document_selection=10,
    ),
    "find_all": RSEParams(
        irrelevant_sentence_penalty=0.18,
        max_segment_length=40,
        overall_max_length=200,
        minimum_segment_value=0.4,
        decay_rate=200,
        top_k_for_document_selection=200,
    ),
}


def get_params(name_or_params: str | RSEParams | None = None) -> RSEParams:
    """Resolve a preset name ("balanced", "precision", "find_all") or pass RSEParams through.

    ``None`` means "balanced".
    """
    if name_or_params is None:
        return PRESETS["balanced"]
    if isinstance(name_or_params, RSEParams):
        return name_or_params
    try:
        return PRESETS[name_or_params]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown RSE preset {name_or_params!r}; choose one of {sorted(PRESETS)}"
        ) from None


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------


def relevance_values(
    ranks: ArrayLike, scores: ArrayLike, *, decay_rate: float
) -> NDArray[np.float64]:
    """dsRAG's relevance of a retrieved unit: ``exp(-rank / decay_rate) * score``.

    ``ranks`` are 0-based positions in the (reranked) result list; ``scores`` are absolute
    relevance scores, ideally calibrated to [0, 1] (e.g. a sigmoid of a cross-encoder logit).
    The rank factor keeps a long tail of mediocre hits from adding up to a segment; the score
    factor keeps the top hits of a query nothing answers from looking relevant.
    """
    if not decay_rate > 0:
        raise ValueError("decay_rate must be > 0")
    r = np.asarray(ranks, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    if r.shape != s.shape:
        raise ValueError(f"ranks {r.shape} and scores {s.shape} differ in shape")
    if np.any(r < 0):
        raise ValueError("ranks must be >= 0")
    return np.exp(-r / decay_rate) * s


def sentence_values(
    n: int,
    retrieved: Mapping[int, float] | tuple[ArrayLike, ArrayLike],
    *,
    penalty: float,
) -> NDArray[np.float64]:
    """Value of each of ``n`` sentences: relevance - penalty if retrieved, else -penalty.

    ``retrieved`` is ``{position: relevance}`` or a pair ``(positions, relevances)``. A position
    listed more than once (several queries, or duplicates) keeps its highest relevance.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    if isinstance(retrieved, Mapping):
        positions = np.fromiter(retrieved.keys(), dtype=np.int64, count=len(retrieved))
        relevance = np.fromiter(retrieved.values(), dtype=np.float64, count=len(retrieved))
    else:
        positions = np.asarray(retrieved[0], dtype=np.int64).ravel()
        relevance = np.asarray(retrieved[1], dtype=np.float64).ravel()
        if positions.shape != relevance.shape:
            raise ValueError("positions and relevances differ in length")
    if positions.size and (positions.min() < 0 or positions.max() >= n):
        raise ValueError(f"retrieved positions must lie in [0, {n})")
    if not np.all(np.isfinite(relevance)):
        raise ValueError("relevances must be finite")
    best = np.full(n, -np.inf)
    np.maximum.at(best, positions, relevance)
    best[np.isneginf(best)] = 0.0  # never retrieved: relevance 0
    return best - penalty


# --------------------------------------------------------------------------------------------
# Segments
# --------------------------------------------------------------------------------------------


class Segment(NamedTuple):
    """Sentences ``start`` .. ``end - 1`` (end exclusive) and the sum of their values."""

    start: int
    end: int
    value: float

    @property
    def length(self) -> int:
        return self.end - self.start


def segment_total(segments: list[Segment]) -> float:
    return float(sum(s.value for s in segments))


class _Candidates(NamedTuple):
    """Segments worth considering, as (P, W) matrices: row l holds the segments whose last
    sentence is the l-th positive-value sentence, column j the one starting j positive
    sentences earlier (so column 0 is the shortest). Invalid slots have ``valid`` False."""

    positions: NDArray[np.int64]  # sentence index of each positive-value sentence, ascending
    first: NDArray[np.int64]  # index into `positions` of the segment's first sentence
    length: NDArray[np.int64]  # in sentences
    value: NDArray[np.float64]  # plain sum of the sentence values
    valid: NDArray[np.bool_]


def _check_inputs(
    values: ArrayLike,
    groups: ArrayLike | None,
    max_segment_length: int,
    overall_max_length: int,
    minimum_segment_value: float,
    segment_cost: float,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError("values must be one-dimensional")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite")
    if max_segment_length < 1 or overall_max_length < 0:
        raise ValueError("max_segment_length must be >= 1 and overall_max_length >= 0")
    if np.isnan(minimum_segment_value):
        raise ValueError("minimum_segment_value must not be NaN")
    if not (np.isfinite(segment_cost) and segment_cost >= 0):
        raise ValueError("segment_cost must be finite and >= 0")
    runs = np.zeros(v.size, dtype=np.int64)
    if groups is not None:
        g = np.asarray(groups)
        if g.shape != v.shape:
            raise ValueError(f"groups {g.shape} and values {v.shape} differ in shape")
        # A "group" is a maximal run of equal ids: a segment may not span a change of id.
        if v.size:
            runs[1:] = np.cumsum(g[1:] != g[:-1])
    return v, runs


def _candidates(
    values: NDArray[np.float64],
    runs: NDArray[np.int64],
    *,
    max_segment_length: int,
    max_total_length: int,
    minimum_segment_value: float,
    segment_cost: float,
) -> _Candidates:
    """Segments that can appear in an optimal answer.

    Why only segments that start and end on a positive-value sentence: trimming a first or
    last sentence whose value is <= 0 keeps the segment's sum (so it still clears the minimum),
    shortens it (so it still fits the budget) and does not lower the total. So some optimum -
    and the shortest one, which is the one we return - uses only such segments. With ~100
    retrieved sentences this shrinks the problem from n sentences to ~100 positions.
    Segments worth <= segment_cost never help, so they are dropped even if the minimum
    allows them.
    """
    positions = np.flatnonzero(values > 0)
    p = positions.size
    if p == 0:
        empty = np.zeros((0, 0), dtype=np.int64)
        return _Candidates(positions, empty, empty, np.zeros((0, 0)), np.zeros((0, 0), bool))
    run_of = runs[positions]
    # Earliest positive sentence a segment ending at each positive sentence may start from:
    # same group and within max_segment_length.
    group_start = np.flatnonzero(np.r_[True, runs[1:] != runs[:-1]])
    earliest = np.maximum(positions - max_segment_length + 1, group_start[run_of])
    earliest_first = np.searchsorted(positions, earliest, side="left")
    width = int((np.arange(p) - earliest_first).max()) + 1

    # Segment sums from two short prefix sums - over the positive values, and over the gaps
    # between consecutive positive sentences - instead of one prefix over all n values, whose
    # magnitude (n * penalty) would cost precision. Gaps no segment can span are zeroed.
    positive = values[positions]
    gaps = np.zeros(p)
    if p > 1:
        gap_start, gap_end = positions[:-1] + 1, positions[1:]
        spannable = (run_of[:-1] == run_of[1:]) & (gap_end - positions[:-1] < max_segment_length)
        spannable &= gap_end > gap_start
        if spannable.any():
            bounds = np.column_stack((gap_start[spannable], gap_end[spannable])).ravel()
            gaps[:-1][spannable] = np.add.reduceat(values, bounds)[::2]
    positive_prefix = np.r_[0.0, np.cumsum(positive)]
    gap_prefix = np.r_[0.0, np.cumsum(gaps)]

    last = np.arange(p)[:, None]
    first = last - np.arange(width)[None, :]
    valid = first >= earliest_first[:, None]
    first = np.where(valid, first, last)  # any in-range index; masked out below
    length = positions[last] - positions[first] + 1
    value = (positive_prefix[last + 1] - positive_prefix[first]) + (
        gap_prefix[last] - gap_prefix[first]
    )
    valid &= (
        (value >= minimum_segment_value) & (value > segment_cost) & (length <= max_total_length)
    )
    return _Candidates(positions, first, length, value, valid)


def _join_touching(
    segments: list[Segment], runs: NDArray[np.int64], max_segment_length: int
) -> list[Segment]:
    """Join segments that touch (a.end == b.start) in the same group while the result fits.

    Two touching segments are worth exactly as much as their union, which clears the minimum
    whenever its parts do, so joining changes neither total value nor length - it only stops
    a run of hits from coming back as a string of one-sentence segments (a zero-cost tie).
    """
    joined: list[Segment] = []
    for seg in sorted(segments, key=lambda s: s.start):
        if joined:
            prev = joined[-1]
            if (
                prev.end == seg.start
                and runs[prev.end - 1] == runs[seg.start]
                and seg.end - prev.start <= max_segment_length
            ):
                joined[-1] = Segment(prev.start, seg.end, prev.value + seg.value)
                continue
        joined.append(seg)
    return sorted(joined, key=lambda s: (-s.value, s.start))


def best_segments(
    values: ArrayLike,
    *,
    groups: ArrayLike | None = None,
    max_segment_length: int,
    overall_max_length: int,
    minimum_segment_value: float,
    segment_cost: float = 0.0,
) -> list[Segment]:
    """The exact optimum: the set of segments with the largest total value under the limits.

    ``groups`` (same length as ``values``) holds a document or section id per sentence; a
    segment never spans a change of id. Ties go to the smallest total length, then to the
    solution whose segments end earliest; touching segments are then joined when the union
    fits ``max_segment_length`` (same value, same length). Segments come sorted by value,
    best first, then by position. An empty list means no segment is worth
    ``minimum_segment_value`` - the corpus cannot answer.

    ``segment_cost`` (default 0, i.e. the plain problem) is deducted once per segment from the
    objective, never from ``Segment.value``; see :class:`RSEParams` for why it exists.

    Method: weighted interval scheduling with a length budget. Only segments whose first and
    last sentences have positive value are considered (see ``_candidates``); with P such
    sentences and W = min(P, max_segment_length) there are at most P * W candidates. With
    best[k][b] = the best total using the first k positive sentences and exactly b sentences
    of budget, each candidate (i..k) of length len and net gain g gives

        best[k+1][b] = max(best[k][b], max over candidates ending at k of best[i][b - len] + g)

    For a fixed b the inner max only reads columns < b, and the outer max over k is a running
    maximum, so the DP runs one vectorised step per budget value: O(B * P * W) work in
    O(B) numpy steps, B = min(overall_max_length, sentences covered by candidates);
    memory O(P * (W + B)). Finding the positive sentences is a single O(n) pass.
    """
    v, runs = _check_inputs(
        values, groups, max_segment_length, overall_max_length, minimum_segment_value,
        segment_cost,
    )
    budget = int(min(overall_max_length, v.size))
    cand = _candidates(
        v, runs, max_segment_length=max_segment_length, max_total_length=budget,
        minimum_segment_value=minimum_segment_value, segment_cost=segment_cost,
    )
    if not cand.valid.any():
        return []
    p = cand.first.shape[0]
    # No set of disjoint candidates can use more sentences than their union covers, so budget
    # beyond that is dead weight (find_all's 200 often shrinks to a few dozen).
    longest = np.where(cand.valid, cand.length, 0).max(axis=1)
    has_any = longest > 0
    coverage = np.zeros(v.size + 1, dtype=np.int64)
    np.add.at(coverage, cand.positions[has_any] - longest[has_any] + 1, 1)
    np.add.at(coverage, cand.positions[has_any] + 1, -1)
    budget = min(budget, int(np.count_nonzero(np.cumsum(coverage[:-1]))))
    # best[k, pad + b]; the `pad` columns of -inf on the left stand for "b - len < 0", so each
    # step is a single gather through precomputed flat indices.
    pad = int(cand.length.max())
    cols = pad + budget + 1
    best = np.full((p + 1, cols), -np.inf)
    best[:, pad] = 0.0  # nothing chosen, no budget used
    flat_best = best.reshape(-1)  # a view
    source = cand.first * cols + pad - cand.length  # + b: the state before the candidate
    net = np.where(cand.valid, cand.value - segment_cost, -np.inf)  # what a segment adds
    # Near-ties (floating-point noise) must not beat the tie-break - skip, i.e. shorter and
    # earlier - so taking a segment must win by more than this; it costs ~1e-12 of optimality.
    tol = 1e-12 * max(1.0, float(net.max()))
    picks = np.zeros((p, budget + 1), dtype=np.int64)  # column of the best candidate ending at k
    takes = np.zeros((p, budget + 1), dtype=bool)  # whether taking it beats skipping k
    rows = np.arange(p)
    for b in range(1, budget + 1):
        gain = flat_best[source + b] + net
        pick = np.argmax(gain, axis=1)  # first maximum = shortest segment ending here
        ending_here = gain[rows, pick]
        np.maximum.accumulate(ending_here, out=best[1:, pad + b])
        picks[:, b] = pick
        takes[:, b] = ending_here > best[:-1, pad + b] + tol

    final = best[p, pad:]
    top_total = final.max()
    if not top_total > 0:
        return []
    b = int(np.flatnonzero(final >= top_total - tol)[0])  # smallest length reaching the top
    segments: list[Segment] = []
    k = p
    while k > 0 and b > 0:
        if not takes[k - 1, b]:
            k -= 1
            continue
        last, j = k - 1, int(picks[k - 1, b])
        first, length = int(cand.first[last, j]), int(cand.length[last, j])
        start = int(cand.positions[first])
        segments.append(Segment(start, start + length, float(cand.value[last, j])))
        b -= length
        k = first
    return _join_touching(segments, runs, max_segment_length)


def greedy_segments(
    values: ArrayLike,
    *,
    groups: ArrayLike | None = None,
    max_segment_length: int,
    overall_max_length: int,
    minimum_segment_value: float,
    segment_cost: float = 0.0,
) -> list[Segment]:
    """dsRAG's greedy method, for comparison: repeatedly take the single most valuable segment
    that fits (no overlap, within budget) until none is worth ``minimum_segment_value``.

    Same candidate set as :func:`best_segments` (dsRAG also skips segments with a negative
    first or last value; it allows zero-valued ends, which only changes ties). Ties go to the
    earliest start, then the shortest, as in dsRAG's scan. The result is always feasible,
    so its total is never above :func:`best_segments`'s. ``segment_cost`` only drops
    segments worth no more than it (the greedy order does not depend on it).
    """
    v, runs = _check_inputs(
        values, groups, max_segment_length, overall_max_length, minimum_segment_value,
        segment_cost,
    )
    cand = _candidates(
        v, runs, max_segment_length=max_segment_length,
        max_total_length=int(min(overall_max_length, v.size)),
        minimum_segment_value=minimum_segment_value, segment_cost=segment_cost,
    )
    if not cand.valid.any():
        return []
    last = np.broadcast_to(np.arange(cand.first.shape[0])[:, None], cand.first.shape)[cand.valid]
    first, length, value = cand.first[cand.valid], cand.length[cand.valid], cand.value[cand.valid]
    order = np.lexsort((length, first))  # dsRAG's scan order: by start, then by length
    first, last, length, value = first[order], last[order], length[order], value[order]
    taken = np.zeros(cand.positions.size, dtype=np.int64)  # 1 where a positive sentence is used
    remaining = overall_max_length
    segments: list[Segment] = []
    while remaining > 0:
        # Candidates and chosen segments both end on positive sentences, so they overlap iff
        # they share one: count taken positive sentences in first..last with a prefix sum.
        prefix = np.r_[0, np.cumsum(taken)]
        feasible = (prefix[last + 1] == prefix[first]) & (length <= remaining)
        if not feasible.any():
            break
        masked = np.where(feasible, value, -np.inf)
        c = int(np.argmax(masked))
        start = int(cand.positions[first[c]])
        segments.append(Segment(start, start + int(length[c]), float(value[c])))
        taken[first[c] : last[c] + 1] = 1
        remaining -= int(length[c])
    return _join_touching(segments, runs, max_segment_length)


def extract_segments(
    n: int,
    positions: ArrayLike,
    ranks: ArrayLike,
    scores: ArrayLike,
    *,
    params: str | RSEParams | None = None,
    groups: ArrayLike | None = None,
) -> list[Segment]:
    """The whole chain for one query: relevance -> sentence values -> :func:`best_segments`.

    ``positions[i]`` is where retrieved sentence i sits among the ``n`` sentences of the
    candidate documents laid end to end; ``ranks``/``scores`` are its rank and score.
    Document selection (``top_k_for_document_selection``) is the caller's job: it decides
    which documents make up the ``n`` sentences.
    """
    p = get_params(params)
    relevance = relevance_values(ranks, scores, decay_rate=p.decay_rate)
    values = sentence_values(n, (positions, relevance), penalty=p.irrelevant_sentence_penalty)
    return best_segments(values, groups=groups, **p.segment_limits())  # type: ignore[arg-type]
