"""Relevant Segment Extraction: the exact solver against a brute-force reference; hand cases."""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowrag_pg.segment.rse import (
    PRESETS,
    RSEParams,
    Segment,
    best_segments,
    extract_segments,
    get_params,
    greedy_segments,
    relevance_values,
    segment_total,
    sentence_values,
)

# ---------------------------------------------------------------------------------------------
# Brute-force reference
# ---------------------------------------------------------------------------------------------


def _feasible_segments(values, groups, max_len, min_value):
    """Every segment allowed on its own: length, group and minimum-value limits."""
    n = len(values)
    out = []
    for s in range(n):
        for e in range(s + 1, min(n, s + max_len) + 1):
            if any(groups[i] != groups[i - 1] for i in range(s + 1, e)):
                continue  # spans a change of group id
            total = sum(values[s:e])
            if total >= min_value:
                out.append((s, e, total))
    return out


def _all_sets(segments, budget):
    """Every set of pairwise disjoint segments with total length <= budget (the empty set too)."""
    segments = sorted(segments)

    def rec(i, after, left):
        yield []
        for j in range(i, len(segments)):
            s, e, v = segments[j]
            if s >= after and e - s <= left:
                for rest in rec(j + 1, e, left - (e - s)):
                    yield [(s, e, v), *rest]

    yield from rec(0, 0, budget)


def brute_force_optimum(values, groups, max_len, budget, min_value, cost=0.0):
    segs = _feasible_segments(values, groups, max_len, min_value)
    return max(sum(v - cost for _, _, v in chosen) for chosen in _all_sets(segs, budget))


def objective(segments, cost=0.0):
    return sum(s.value - cost for s in segments)


def assert_feasible(segments, values, groups, max_len, budget, min_value):
    values = list(values)
    ordered = sorted(segments, key=lambda s: s.start)
    for a, b in zip(ordered, ordered[1:]):
        assert a.end <= b.start, "segments overlap"
    assert sum(s.length for s in segments) <= budget
    for s in segments:
        assert 0 <= s.start < s.end <= len(values)
        assert s.length <= max_len
        assert all(
            groups[i] == groups[i - 1] for i in range(s.start + 1, s.end)
        ), "segment crosses a group boundary"
        assert s.value == pytest.approx(sum(values[s.start : s.end]), abs=1e-9)
        assert s.value >= min_value - 1e-12
    # Best first.
    assert [s.value for s in segments] == sorted((s.value for s in segments), reverse=True)


# Values are multiples of 1/8 so that every sum is exact in binary floating point: the
# reference and the solver then agree on "sum >= minimum" regardless of summation order.
eighths = st.integers(-8, 8).map(lambda i: i / 8)


@st.composite
def problems(draw, max_n=10):
    n = draw(st.integers(0, max_n))
    values = draw(st.lists(eighths, min_size=n, max_size=n))
    groups = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    max_len = draw(st.integers(1, 6))
    budget = draw(st.integers(0, 12))
    min_value = draw(st.integers(-8, 16)) / 8
    cost = draw(st.sampled_from([0.0, 0.0, 0.125, 0.5, 1.0]))
    return values, groups, max_len, budget, min_value, cost


@settings(max_examples=400, deadline=None)
@given(problems())
def test_exact_matches_brute_force(problem):
    values, groups, max_len, budget, min_value, cost = problem
    kw = dict(
        max_segment_length=max_len, overall_max_length=budget, minimum_segment_value=min_value
    )
    got = best_segments(np.array(values), groups=np.array(groups), segment_cost=cost, **kw)
    assert_feasible(got, values, groups, max_len, budget, min_value)
    expected = brute_force_optimum(values, groups, max_len, budget, min_value, cost)
    assert objective(got, cost) == pytest.approx(expected, abs=1e-9)
    # Nothing returned is dead weight: each segment adds to the objective.
    assert all(s.value > cost for s in got)


@settings(max_examples=200, deadline=None)
@given(problems(max_n=14))
def test_greedy_is_feasible_and_never_beats_exact(problem):
    values, groups, max_len, budget, min_value, cost = problem
    kw = dict(
        groups=groups, max_segment_length=max_len, overall_max_length=budget,
        minimum_segment_value=min_value, segment_cost=cost,
    )
    greedy = greedy_segments(values, **kw)
    exact = best_segments(values, **kw)
    assert_feasible(greedy, values, groups, max_len, budget, min_value)
    assert objective(exact, cost) >= objective(greedy, cost) - 1e-9


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(-1, 1, allow_nan=False), min_size=0, max_size=60),
    st.integers(1, 20),
    st.integers(1, 40),
    st.floats(-0.5, 2.0),
)
def test_float_inputs_feasible_and_deterministic(values, max_len, budget, min_value):
    groups = [i // 17 for i in range(len(values))]
    kw = dict(
        groups=groups, max_segment_length=max_len, overall_max_length=budget,
        minimum_segment_value=min_value,
    )
    first = best_segments(values, **kw)
    assert_feasible(first, values, groups, max_len, budget, min_value)
    assert best_segments(list(values), **kw) == first
    assert segment_total(first) >= segment_total(greedy_segments(values, **kw)) - 1e-9


# ---------------------------------------------------------------------------------------------
# Hand cases
# ---------------------------------------------------------------------------------------------

LIMITS = dict(max_segment_length=15, overall_max_length=30, minimum_segment_value=0.5)


def test_all_negative_gives_nothing():
    assert best_segments(np.full(50, -0.2), **LIMITS) == []
    assert greedy_segments(np.full(50, -0.2), **LIMITS) == []
    assert best_segments(np.zeros(0), **LIMITS) == []


def test_single_strong_sentence():
    values = np.full(40, -0.2)
    values[17] = 0.9
    assert best_segments(values, **LIMITS) == [Segment(17, 18, 0.9)]


def test_sandwiched_sentences_are_bridged_when_worth_it():
    # Two hits two sentences apart: 0.8 + 0.8 - 2 * 0.2 = 1.2 as one segment.
    values = np.full(30, -0.2)
    values[[10, 13]] = 0.8
    # Apart, each already clears the minimum, so the plain optimum keeps them apart...
    assert [(s.start, s.end) for s in best_segments(values, **LIMITS)] == [(10, 11), (13, 14)]
    # ...a per-segment cost above the gap's cost (0.4) joins them, as dsRAG's greedy does.
    joined = best_segments(values, segment_cost=0.5, **LIMITS)
    assert [(s.start, s.end) for s in joined] == [(10, 14)]
    assert joined[0].value == pytest.approx(1.2)
    assert [(s.start, s.end) for s in greedy_segments(values, **LIMITS)] == [(10, 14)]
    # When neither hit clears the minimum alone, bridging is the only way to get context.
    values[[10, 13]] = 0.475  # each < 0.5 alone; together 0.95 - 0.4 = 0.55
    assert [(s.start, s.end) for s in best_segments(values, **LIMITS)] == [(10, 14)]


def test_segment_never_crosses_a_group_boundary():
    values = np.full(10, 0.5)
    groups = np.array([0] * 5 + [1] * 5)
    kw = dict(max_segment_length=10, overall_max_length=10, minimum_segment_value=0.0,
              segment_cost=1.0)
    # One long segment would save a segment cost, but may not span documents 0 and 1; the
    # two touching halves are not joined afterwards either.
    got = best_segments(values, groups=groups, **kw)
    assert sorted((s.start, s.end) for s in got) == [(0, 5), (5, 10)]
    assert sorted((s.start, s.end) for s in greedy_segments(values, groups=groups, **kw)) == [
        (0, 5), (5, 10)
    ]
    without = best_segments(values, max_segment_length=10, overall_max_length=10,
                            minimum_segment_value=0.0, segment_cost=1.0)
    assert [(s.start, s.end) for s in without] == [(0, 10)]
    # Same ids that come back after another id are separate groups (0, 0, 1, 0): no bridging.
    kw = dict(max_segment_length=4, overall_max_length=4, minimum_segment_value=0.0,
              segment_cost=2.5)
    assert [(s.start, s.end) for s in best_segments([1.0, 1.0, -0.1, 1.0], **kw)] == [(0, 4)]
    # Split into groups, no piece is worth the cost any more.
    assert best_segments([1.0, 1.0, -0.1, 1.0], groups=[0, 0, 1, 0], **kw) == []
    got = best_segments([1.0, 1.0, -0.1, 1.0], groups=[0, 0, 1, 0], max_segment_length=4,
                        overall_max_length=4, minimum_segment_value=0.0, segment_cost=0.5)
    assert sorted((s.start, s.end) for s in got) == [(0, 2), (3, 4)]


def test_minimum_value_filters():
    values = np.full(20, -0.2)
    values[5] = 0.4  # a lone hit (value already net of the penalty)
    assert best_segments(values, max_segment_length=15, overall_max_length=30,
                         minimum_segment_value=0.5) == []
    got = best_segments(values, max_segment_length=15, overall_max_length=30,
                        minimum_segment_value=0.4)
    assert [(s.start, s.end) for s in got] == [(5, 6)]


def test_overall_budget_respected_and_best_used():
    values = np.full(100, -0.3)
    for start, strength in [(5, 0.9), (30, 0.6), (60, 1.0), (80, 0.7)]:
        values[start : start + 3] = strength
    got = best_segments(values, max_segment_length=5, overall_max_length=7,
                        minimum_segment_value=0.5)
    assert sum(s.length for s in got) <= 7
    # The two strongest 3-runs (6 sentences) plus one sentence of the next best run.
    assert sorted((s.start, s.end) for s in got) == [(5, 8), (60, 63), (80, 81)]


def test_max_segment_length_respected():
    values = np.full(30, 0.5)
    got = best_segments(values, max_segment_length=4, overall_max_length=30,
                        minimum_segment_value=0.0, segment_cost=0.1)
    assert all(s.length <= 4 for s in got)
    assert sum(s.length for s in got) == 30


def test_exact_beats_greedy_when_budget_binds():
    values = [1.0, -0.1, 1.0, -5.0, 0.9, -5.0, 0.9]
    kw = dict(max_segment_length=3, overall_max_length=3, minimum_segment_value=0.0)
    assert [(s.start, s.end) for s in greedy_segments(values, **kw)] == [(0, 3)]
    exact = best_segments(values, **kw)
    assert sorted((s.start, s.end) for s in exact) == [(0, 1), (2, 3), (4, 5)]
    assert segment_total(exact) == pytest.approx(2.9)


def test_ties_go_to_shortest_then_earliest():
    # (0, 1) and (0, 3) are both worth 1.0: the shorter wins.
    got = best_segments([1.0, -0.5, 0.5], max_segment_length=3, overall_max_length=3,
                        minimum_segment_value=1.0)
    assert got == [Segment(0, 1, 1.0)]
    # Two equal single sentences and room for one: the earlier wins.
    got = best_segments([0.5, -1.0, 0.5], max_segment_length=1, overall_max_length=1,
                        minimum_segment_value=0.0)
    assert got == [Segment(0, 1, 0.5)]


def test_sorted_by_value_and_deterministic():
    rng = np.random.default_rng(7)
    values = np.where(rng.random(300) < 0.1, rng.random(300), 0.0) - 0.2
    runs = [best_segments(values, **LIMITS) for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert [s.value for s in runs[0]] == sorted((s.value for s in runs[0]), reverse=True)


def test_bad_inputs():
    with pytest.raises(ValueError):
        best_segments([0.1, float("nan")], **LIMITS)
    with pytest.raises(ValueError):
        best_segments([0.1, 0.2], groups=[0], **LIMITS)
    with pytest.raises(ValueError):
        best_segments([[0.1]], **LIMITS)


# ---------------------------------------------------------------------------------------------
# Values and parameters
# ---------------------------------------------------------------------------------------------


def test_relevance_values_formula():
    got = relevance_values([0, 30, 60], [0.9, 0.9, 0.5], decay_rate=30)
    assert got == pytest.approx([0.9, 0.9 / math.e, 0.5 / math.e**2])
    with pytest.raises(ValueError):
        relevance_values([0, 1], [0.5], decay_rate=30)
    with pytest.raises(ValueError):
        relevance_values([0], [0.5], decay_rate=0)


def test_sentence_values():
    got = sentence_values(4, {1: 0.9, 3: 0.3}, penalty=0.2)
    assert got == pytest.approx([-0.2, 0.7, -0.2, 0.1])
    # Arrays; a repeated position keeps its highest relevance.
    got = sentence_values(3, ([2, 0, 2], [0.1, 0.5, 0.4]), penalty=0.2)
    assert got == pytest.approx([0.3, -0.2, 0.2])
    assert sentence_values(0, {}, penalty=0.2).shape == (0,)
    with pytest.raises(ValueError):
        sentence_values(3, {3: 0.5}, penalty=0.2)


def test_presets_and_get_params():
    assert set(PRESETS) == {"balanced", "precision", "find_all"}
    balanced = get_params("balanced")
    assert get_params(None) is balanced
    assert (balanced.irrelevant_sentence_penalty, balanced.max_segment_length,
            balanced.overall_max_length, balanced.minimum_segment_value,
            balanced.decay_rate) == (0.18, 15, 30, 0.5, 30)
    custom = balanced.replace(minimum_segment_value=0.9)
    assert get_params(custom) is custom and custom.minimum_segment_value == 0.9
    with pytest.raises(ValueError):
        get_params("nope")
    with pytest.raises(dataclasses.FrozenInstanceError):
        balanced.decay_rate = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        RSEParams(0.2, 15, 30, 0.5, 30)  # type: ignore[misc]  # keyword-only
    with pytest.raises(ValueError):
        balanced.replace(max_segment_length=0)
    with pytest.raises(ValueError):
        balanced.replace(decay_rate=0)


def test_extract_segments_end_to_end():
    # Sentences 40..43 of 100 were retrieved at ranks 0..3 with strong scores.
    got = extract_segments(100, [41, 40, 43, 90], [0, 1, 2, 3], [0.95, 0.9, 0.8, 0.3],
                           params="balanced")
    assert got and got[0].start == 40 and got[0].end in (42, 44)
    assert all(not (s.start <= 90 < s.end) for s in got)  # the weak far hit is dropped
    # A query nothing answers: low scores everywhere -> no context at all.
    assert extract_segments(100, [3, 50], [0, 1], [0.2, 0.15], params="precision") == []


def test_speed_on_a_realistic_problem():
    rng = np.random.default_rng(0)
    n, hits = 5_000, 100
    positions = np.sort(rng.choice(n, hits, replace=False))
    clusters = rng.choice(positions, 10, replace=False)  # some hits cluster, as real ones do
    neighbours = (clusters[:, None] + np.arange(1, 6)).ravel()
    positions = np.unique(np.concatenate([positions, neighbours]))
    positions = positions[positions < n]
    relevance = relevance_values(rng.permutation(positions.size), rng.random(positions.size),
                                 decay_rate=30)
    values = sentence_values(n, (positions, relevance), penalty=0.18)
    groups = np.arange(n) // 250
    best_segments(values, groups=groups, **LIMITS)  # warm-up
    start = time.perf_counter()
    best_segments(values, groups=groups, **LIMITS)
    assert time.perf_counter() - start < 0.5  # a few ms in practice; generous for slow CI
