"""Budget-first selection: the most valuable contiguous runs of sentences under a token budget.

Pure numpy, no I/O. The candidates are sentences in document order, each with a value (how much
it is worth sending, already net of its token price, which choose_segments subtracts), a token count and
whether it may continue the run of the sentence before it (same section, next ordinal). We pick
at most ``max_segments`` runs that do not overlap, never cross a break, and hold at most
``budget`` tokens together, maximising the summed value — exactly, by dynamic programming:

    closed[i][j][c] = best total over sentences ..i, sentence i not sent, j runs, c token units
    opened[i][j][c] = the same with sentence i sent (it ends or continues run j)

    closed[i] = max(closed[i-1], opened[i-1])
    opened[i][j][c] = value[i] + max(opened[i-1][j][c - cost[i] - gap[i-1]]   if i continues i-1,
                                     closed[i][j-1][c - cost[i]])             (a new run)

``gap[i-1]`` is the tokens of the document's text between sentences i-1 and i (Markdown list
markers, a table's |---| row, tags of raw HTML): a run sends it; two runs, one ending at i-1 and
the next starting at i, do not (two contexts, the markup between them left out) — allowed only
for a gap of at least MIN_SPLIT_GAP tokens; otherwise a new run starts after a sentence not sent.
A run that starts at i also sends ``lead[i]`` tokens in front (a list's lead-in sentence, a
table's header row: values.Lead), so a new run costs ``tokens[i] + lead[i]``.

One vectorised step per sentence over the (runs × token units) table: O(n · k · B) work.
Token counts are rounded UP to units of ``ceil(budget / max_units)`` tokens when the budget is
large, so the budget is never exceeded (the optimum is exact in those units). Ties go to the
fewer tokens. A sentence worth nothing or less (a heading is worth nothing: choose_segments) is
never sent at the edge of a run, so runs start and end on valuable sentences and bridge a weak
one only when both sides pay for it.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ..limits import MAX_RETURNED_TOKENS
from .values import CandidateSentence, Lead, feature_matrix, query_relevance, sentence_probabilities

__all__ = ["Run", "Selection", "choose_segments", "run_breaks", "run_leads", "select_runs", "windows_by_value"]

# the token axis of the table holds at most this many units (a 2,048-token budget: 4 tokens a unit)
MAX_UNITS = 512
# the smallest gap two touching runs may leave out (a context's citation line in format_context,
# "[n] Title [doc-id] › Section, chars a–b", is about as long)
MIN_SPLIT_GAP = 16


class Run(NamedTuple):
    """Candidates ``start`` .. ``end - 1`` (end exclusive), their summed value and tokens."""

    start: int
    end: int
    value: float
    tokens: int


def select_runs(values: ArrayLike, tokens: ArrayLike, continues: ArrayLike, *, budget: int,
                max_segments: int, gaps: ArrayLike | None = None, leads: ArrayLike | None = None,
                max_units: int = MAX_UNITS) -> list[Run]:
    """The set of at most MAX_SEGMENTS runs with the largest total value within BUDGET tokens.

    ``continues[i]`` is True when candidate i may extend a run that holds candidate i - 1
    (``continues[0]`` is ignored). ``gaps[i]`` is the tokens between candidate i and the next
    one, spent when a run holds both (none when not given); ``leads[i]`` the tokens a run that
    starts at candidate i sends in front of it (none when not given). Runs come in document
    order, their tokens with the gaps inside them and their lead; an empty list means no run is
    worth more than nothing.
    """
    v, t, cont, g, lead = _checked(values, tokens, continues, gaps, leads)
    n = v.size
    if not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget must be a positive integer of tokens, not {budget!r}")
    if not isinstance(max_segments, int) or max_segments < 1:
        raise ValueError(f"max_segments must be a positive integer, not {max_segments!r}")
    if n == 0 or not (v > 0).any():
        return []

    unit = max(1, math.ceil(budget / max_units))
    cap = budget // unit
    # two runs that touch (the second starts right after the first) only to leave out a gap of
    # at least MIN_SPLIT_GAP tokens: below it, a second citation costs the reader more (the gaps
    # as given, before they are capped at the budget, which may be smaller)
    splits = np.zeros(n, dtype=bool)
    splits[1:] = g[:-1] >= MIN_SPLIT_GAP
    t, g = np.minimum(t, budget + 1), np.minimum(g, budget + 1)  # past the budget all alike (no overflow)
    lead = np.minimum(lead, budget + 1)
    # ceil: rounding up never lets the real total pass the budget; a new run also sends its lead
    cost = -(-(t + lead) // unit)
    # a continuation also sends the gap before it (rounded up with the sentence)
    cost_on = cost.copy()
    cost_on[1:] = -(-(t[1:] + g[:-1]) // unit)  # (a continuation sends no lead)
    k = max_segments
    closed = np.full((k + 1, cap + 1), -np.inf)
    closed[0, 0] = 0.0
    opened = np.full((k + 1, cap + 1), -np.inf)
    opened_now = np.empty_like(opened)  # buffers reused step to step: the loop is call-bound
    longer = np.empty_like(opened)
    # for the way back: was opened[i] a continuation, did closed[i] come from opened[i-1]
    extended = np.zeros((n, k + 1, cap + 1), dtype=bool)
    from_open = np.zeros((n, k + 1, cap + 1), dtype=bool)
    for i in range(n):
        c, on = int(cost[i]), int(cost_on[i])
        opened_now.fill(-np.inf)  # row 0 stays so: no run is open with 0 runs
        # a new run starts after a sentence not sent, or right after one it could continue when
        # the gap between them is worth a second context
        after_unsent = i > 0 and bool(cont[i]) and not splits[i]
        if after_unsent and c <= cap:
            np.add(closed[:-1, :cap + 1 - c], v[i], out=opened_now[1:, c:])  # closed: i - 1 not sent
        np.greater(opened, closed, out=from_open[i])
        np.maximum(closed, opened, out=closed)  # closed[i]: sentence i not sent
        if not after_unsent and c <= cap:
            np.add(closed[:-1, :cap + 1 - c], v[i], out=opened_now[1:, c:])  # a new run
        if i > 0 and cont[i] and on <= cap:
            grown = longer[:, :cap + 1 - on]
            np.add(opened[:, :cap + 1 - on], v[i], out=grown)  # the run of i - 1 goes on
            here = opened_now[:, on:]
            np.greater(grown, here, out=extended[i, :, on:])
            np.maximum(here, grown, out=here)
        opened, opened_now = opened_now, opened

    final = np.maximum(closed, opened)
    best = final.max()
    if not best > 0:
        return []
    # fewest runs, then fewest tokens among the (near-)best totals
    tol = 1e-9 * max(1.0, abs(best))
    j = int(np.flatnonzero((final >= best - tol).any(axis=1))[0])
    c = int(np.flatnonzero(final[j] >= best - tol)[0])
    state_open = bool(opened[j, c] >= closed[j, c])
    chosen = np.zeros(n, dtype=bool)
    starts = np.zeros(n, dtype=bool)
    i = n - 1
    while i >= 0 and j > 0:
        if state_open:
            chosen[i] = True
            if extended[i, j, c]:
                c -= int(cost_on[i])
                i -= 1
                continue  # still open at i - 1
            starts[i] = True
            c -= int(cost[i])
            j -= 1
            # the run began at i: before it, i - 1 not sent, or (at a break or a gap worth a
            # second context) the best of closed/opened at i - 1
            i -= 1
            if i >= 0:
                state_open = False if (cont[i + 1] and not splits[i + 1]) else bool(from_open[i + 1, j, c])
            continue
        state_open = bool(from_open[i, j, c])
        i -= 1
    return _runs(chosen, starts, v, t, g, lead)


def _checked(values: ArrayLike, tokens: ArrayLike, continues: ArrayLike, gaps: ArrayLike | None,
             leads: ArrayLike | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The inputs of select_runs / windows_by_value as arrays, or ValueError naming the bad one."""
    v = np.asarray(values, dtype=np.float64)
    none = np.zeros(v.shape, dtype=np.int64)
    arrays = {"tokens": tokens, "gaps": none if gaps is None else gaps, "leads": none if leads is None else leads}
    counts = {}
    for name, given in arrays.items():
        raw = np.asarray(given)
        if raw.size and (raw.dtype.kind not in "iuf" or not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw))):
            raise ValueError(f"{name} must be whole numbers of tokens")
        if raw.size and raw.min() < 0:
            raise ValueError(f"{name} must be >= 0 tokens, not {raw.min()}")
        counts[name] = np.minimum(raw, np.iinfo(np.int64).max // 4).astype(np.int64)
    t, g, lead = counts["tokens"], counts["gaps"], counts["leads"]
    cont = np.asarray(continues, dtype=bool)
    if v.ndim != 1 or t.shape != v.shape or cont.shape != v.shape or g.shape != v.shape or lead.shape != v.shape:
        raise ValueError(f"values {v.shape}, tokens {t.shape}, continues {cont.shape}, gaps {g.shape} and "
                         f"leads {lead.shape} must be equal 1-d shapes")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite")
    return v, t, cont, g, lead


def _runs(chosen: np.ndarray, starts: np.ndarray, values: np.ndarray, tokens: np.ndarray,
          gaps: np.ndarray, leads: np.ndarray) -> list[Run]:
    runs: list[Run] = []
    i, n = 0, chosen.size
    while i < n:
        if not chosen[i]:
            i += 1
            continue
        end = i + 1
        while end < n and chosen[end] and not starts[end]:
            end += 1
        runs.append(Run(i, end, float(values[i:end].sum()),
                        int(leads[i] + tokens[i:end].sum() + gaps[i:end - 1].sum())))
        i = end
    return runs


def windows_by_value(values: ArrayLike, tokens: ArrayLike, continues: ArrayLike, *, budget: int,
                     max_segments: int, window: int, gaps: ArrayLike | None = None,
                     leads: ArrayLike | None = None) -> list[Run]:
    """RSE off, for comparison: the same sentence values, but fixed windows instead of the best runs.

    Sentences worth more than nothing are taken best first (a heading, worth nothing of its own,
    is never a window's centre); each brings its ±``window`` neighbours (clamped at breaks),
    merged with chosen text it overlaps or touches. A window that would need a run beyond
    ``max_segments`` is skipped; one that does not fit the budget (its gaps counted as in
    select_runs) is narrowed around its sentence until it fits (skipped when the sentence alone
    does not), each run's lead counted. Runs in document order.
    """
    v, t, cont, g, lead = _checked(values, tokens, continues, gaps, leads)
    n = v.size
    if n == 0 or budget <= 0 or max_segments <= 0:
        return []
    group = np.cumsum(~cont)  # sentences that may share a run share a group number
    chosen = np.zeros(n, dtype=bool)
    for hit in np.argsort(-v, kind="stable"):
        if v[hit] <= 0:
            break  # the rest are worth nothing either
        if chosen[hit]:
            continue
        for width in range(window, -1, -1):
            low, high = max(0, hit - width), min(n, hit + width + 1)
            inside = np.arange(low, high)
            inside = inside[group[inside] == group[hit]]
            trial = chosen.copy()
            trial[inside] = True
            if _tokens_sent(trial, t, g, cont, lead) > budget:
                continue  # narrower
            if _run_count(trial, cont) <= max_segments:
                chosen = trial
            break  # taken, or would be one run too many at any width
    return _runs(chosen, _run_starts(chosen, cont), v, t, g, lead)


def _run_starts(chosen: np.ndarray, continues: np.ndarray) -> np.ndarray:
    return chosen & ~np.concatenate([[False], chosen[:-1] & continues[1:]])


def _tokens_sent(chosen: np.ndarray, tokens: np.ndarray, gaps: np.ndarray, continues: np.ndarray,
                 leads: np.ndarray) -> int:
    joined = chosen[1:] & chosen[:-1] & continues[1:]  # the gap after i is sent when i + 1 goes on
    return int(tokens[chosen].sum() + gaps[:-1][joined].sum() + leads[_run_starts(chosen, continues)].sum())


def _run_count(chosen: np.ndarray, continues: np.ndarray) -> int:
    joined = chosen[1:] & chosen[:-1] & continues[1:]
    return int(chosen.sum() - joined.sum())


def run_breaks(keys: Sequence[tuple[int, int]], ordinals: Sequence[int]) -> np.ndarray:
    """``continues`` for candidates in document order: same (document, section) key and the
    next ordinal."""
    n = len(ordinals)
    cont = np.zeros(n, dtype=bool)
    for i in range(1, n):
        cont[i] = keys[i] == keys[i - 1] and ordinals[i] == ordinals[i - 1] + 1
    return cont


def run_leads(candidates: Sequence[CandidateSentence], runs: Sequence[Run]) -> list[Lead | None]:
    """The lead each run is sent with (its first candidate's: a list's lead-in, a table's header
    row), or None: none, or a run already holds that unit, or a more valuable run is sent with the
    same lead (two runs of one list: the lead goes with the one a reader keeping only the first
    contexts keeps; found by a tester, it went to the first in document order, which may be the
    last context). Text is never sent twice; the selection priced each lead, so what is left out
    only leaves the budget less spent."""
    held = [(candidates[r.start].document_key, candidates[r.start].ordinal, candidates[r.end - 1].ordinal)
            for r in runs]
    sent: set[tuple[int, int]] = set()
    leads: list[Lead | None] = [None] * len(runs)
    for index in sorted(range(len(runs)), key=lambda i: -runs[i].value):
        first = candidates[runs[index].start]
        lead = first.lead
        if lead is not None:
            key = (first.document_key, lead.ordinal)
            if key in sent or any(doc == key[0] and lo <= lead.ordinal <= hi for doc, lo, hi in held):
                lead = None
            else:
                sent.add(key)
        leads[index] = lead
    return leads


def no_value_of_their_own(candidates: Sequence[CandidateSentence]) -> np.ndarray:
    """Which candidates are never sent for themselves: headings, and table header rows that lead
    rows among the candidates (choose_segments)."""
    led = {(c.document_key, c.lead.ordinal) for c in candidates if c.lead is not None and c.kind == "table_row"}
    return np.asarray([c.kind == "heading" or (c.kind == "table_row" and (c.document_key, c.ordinal) in led)
                       for c in candidates], dtype=bool)


def only_unsendable_match(candidates: Sequence[CandidateSentence], probabilities: np.ndarray, *,
                          min_relevance: float | None) -> bool:
    """True when the candidates that look like evidence (probability from MIN_RELEVANCE up) are all
    headings or header rows, never sent for themselves, of sections with nothing else among the
    candidates: the heading of an empty section ("## Zebra crossing rules" with nothing under it)
    made the query look answered, and the contexts sent were whatever else matched a little. (A
    matching heading over text, a FAQ's question over its answer, is answered by that text.)"""
    if min_relevance is None or not len(candidates):
        return False
    matching = np.asarray(probabilities) >= min_relevance
    no_value = no_value_of_their_own(candidates)
    if not matching.any() or (matching & ~no_value).any():
        return False
    with_text = {(c.document_key, c.section_id) for c, unsendable in zip(candidates, no_value) if not unsendable}
    return not any((c.document_key, c.section_id) in with_text for c, match in zip(candidates, matching) if match)


class Selection(NamedTuple):
    """What budget-first selection decided for one query."""

    runs: list[Run]  # in document order; indexes into the candidates
    probabilities: np.ndarray  # P(evidence) of each candidate
    relevance: float  # how well the corpus can answer at all, in [0, 1] (abstention)


def budget_for_all(candidates: Sequence[CandidateSentence], *, cap: int = MAX_RETURNED_TOKENS,
                   max_units: int = MAX_UNITS) -> int:
    """A token budget within which every candidate fits at once (its tokens, the gap before the
    next and its lead, each rounded up to select_runs' token units), at most CAP: what "no budget"
    plans with. A fixed large bound would make the units coarse and price short sentences far
    above their length."""
    sizes = np.asarray([c.token_count + c.gap_tokens + (c.lead.tokens if c.lead is not None else 0)
                        for c in candidates], dtype=np.int64)
    budget = max(1, int(sizes.sum()))
    while budget < cap:
        unit = math.ceil(budget / max_units)
        if int((-(-sizes // unit)).sum()) <= budget // unit:
            return budget
        budget = min(cap, math.ceil(budget * 1.25))
    return cap


def choose_segments(candidates: Sequence[CandidateSentence], *, query_idf: float, budget: int,
                    max_segments: int, background: float | None = None, sentence_floor: float = 0.0,
                    probabilities: np.ndarray | None = None, relevance: float | None = None,
                    window: int | None = None) -> Selection:
    """Sentence values → the best runs within BUDGET tokens (at most MAX_SEGMENTS of them).

    A sentence's value is its probability of holding evidence minus its token price: the price of
    an average (32-token) sentence is SENTENCE_FLOOR times the best probability of the query, so
    the price follows each query's own value distribution. With a floor of 0 every sentence is
    worth sending and the budget is filled; above 0 weak sentences are left out even when they fit.
    ``background`` is the query's similarity to everyday text (embed/background.py), for the
    relevance. ``probabilities`` replaces the model's (e.g. folded with cross-encoder scores), and
    then ``relevance`` gives the query's relevance as computed from the model's own. With
    ``window``, RSE is off: fixed ±window windows around the best sentences (windows_by_value).
    """
    if probabilities is None:  # given: already folded with the cross-encoder's scores
        probabilities = sentence_probabilities(feature_matrix(candidates))
    if relevance is None:
        relevance = query_relevance(candidates, query_idf=query_idf, background=background,
                                    probabilities=probabilities)
    if not candidates:
        return Selection([], probabilities, relevance)
    tokens = np.asarray([c.token_count for c in candidates], dtype=np.int64)
    price = sentence_floor * float(probabilities.max()) * tokens / 32.0
    # A heading is worth nothing of its own: its words are the last step of the section path that
    # cites every context of its section, and alone it answers nothing (at small budgets the
    # selection sent bare headings, a context each). It is never sent alone nor at a run's edge
    # (and runs stay within a section, whose first unit it is); its probability still counts for
    # the relevance and its neighbours' features. So is a table's header row that leads rows among
    # the candidates: it is sent in front of a run of them (their lead), never alone, nor at the
    # end of a run (a run may still start with it: then its rows follow).
    worth = np.where(no_value_of_their_own(candidates), -price, probabilities - price)
    gaps = np.asarray([c.gap_tokens for c in candidates], dtype=np.int64)
    leads = np.asarray([c.lead.tokens if c.lead is not None else 0 for c in candidates], dtype=np.int64)
    continues = run_breaks([(c.document_key, c.section_id) for c in candidates], [c.ordinal for c in candidates])
    if window is not None:
        runs = windows_by_value(worth, tokens, continues, budget=budget,
                                max_segments=max_segments, window=window, gaps=gaps, leads=leads)
    else:
        runs = select_runs(worth, tokens, continues, budget=budget, max_segments=max_segments, gaps=gaps,
                           leads=leads)
    return Selection(runs, probabilities, relevance)
