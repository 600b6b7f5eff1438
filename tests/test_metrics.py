"""Evaluation metrics on hand-made cases with known answers."""
from __future__ import annotations

import numpy as np
import pytest

from windowrag_pg.evaluation.metrics import (
    ContextSpan,
    GoldSpan,
    aggregate,
    answer_hit_at_k,
    duplicated_chars,
    duplicated_tokens,
    evidence_recall_at_k,
    hit_at_k,
    normalize_answer_text,
    percentile,
    reciprocal_rank,
)


def ctx(doc, start, end, text=""):
    return ContextSpan(doc, start, end, text)


# --- hit@k and reciprocal rank ---------------------------------------------------------------


def test_gold_exactly_on_the_context_edges_counts_as_inside():
    gold = [GoldSpan("a", 10, 20)]
    assert hit_at_k([ctx("a", 10, 20)], gold, 1) == 1.0
    assert reciprocal_rank([ctx("a", 10, 20)], gold) == 1.0


@pytest.mark.parametrize("context", [(11, 20), (10, 19), (11, 19)])
def test_gold_one_char_beyond_the_context_does_not_count(context):
    gold = [GoldSpan("a", 10, 20)]
    contexts = [ctx("a", *context)]
    assert hit_at_k(contexts, gold, 1) == 0.0
    assert reciprocal_rank(contexts, gold) == 0.0
    # Partly covered: recall sees it, hit does not.
    assert evidence_recall_at_k(contexts, gold, 1) == pytest.approx(
        (context[1] - context[0]) / 10
    )


def test_two_gold_spans_only_one_covered():
    gold = [GoldSpan("a", 0, 10), GoldSpan("a", 100, 130)]
    contexts = [ctx("a", 95, 140)]
    assert hit_at_k(contexts, gold, 1) == 1.0
    assert reciprocal_rank(contexts, gold) == 1.0
    assert evidence_recall_at_k(contexts, gold, 1) == pytest.approx(30 / 40)


def test_overlapping_gold_spans_are_not_double_counted():
    gold = [GoldSpan("a", 0, 10), GoldSpan("a", 5, 15)]  # union: 15 chars
    assert evidence_recall_at_k([ctx("a", 0, 6)], gold, 1) == pytest.approx(6 / 15)
    assert evidence_recall_at_k([ctx("a", 0, 15)], gold, 1) == 1.0
    # Overlapping contexts are not double counted either.
    assert evidence_recall_at_k([ctx("a", 0, 6), ctx("a", 3, 9)], gold, 2) == pytest.approx(9 / 15)
    # Touching gold spans form one union too.
    touching = [GoldSpan("a", 0, 5), GoldSpan("a", 5, 10)]
    assert evidence_recall_at_k([ctx("a", 2, 7)], touching, 1) == pytest.approx(5 / 10)


def test_empty_result():
    gold = [GoldSpan("a", 0, 10)]
    assert hit_at_k([], gold, 5) == 0.0
    assert reciprocal_rank([], gold) == 0.0
    assert evidence_recall_at_k([], gold, 5) == 0.0
    assert answer_hit_at_k([], ["x"], 5) == 0.0


def test_no_gold_is_not_counted():
    contexts = [ctx("a", 0, 10, "some text")]
    assert hit_at_k(contexts, [], 5) is None
    assert reciprocal_rank(contexts, []) is None
    assert evidence_recall_at_k(contexts, [], 5) is None
    assert evidence_recall_at_k(contexts, [GoldSpan("a", 3, 3)], 5) is None  # no gold chars
    assert answer_hit_at_k(contexts, [], 5) is None
    assert answer_hit_at_k(contexts, ["  ", ""], 5) is None  # blank answers match anything


def test_contexts_from_another_document_do_not_count():
    gold = [GoldSpan("a", 10, 20)]
    contexts = [ctx("b", 0, 100), ctx(7, 0, 100)]
    assert hit_at_k(contexts, gold, 2) == 0.0
    assert reciprocal_rank(contexts, gold) == 0.0
    assert evidence_recall_at_k(contexts, gold, 2) == 0.0
    # Mixed: the gold is in document "a" only.
    gold = [GoldSpan("a", 0, 10), GoldSpan("b", 0, 10)]
    assert evidence_recall_at_k([ctx("b", 0, 5)], gold, 1) == pytest.approx(5 / 20)


def test_k_cut_off_respected():
    gold = [GoldSpan("a", 50, 60)]
    contexts = [ctx("a", 0, 10), ctx("b", 0, 100), ctx("a", 40, 70, "the answer is 42")]
    assert hit_at_k(contexts, gold, 2) == 0.0
    assert hit_at_k(contexts, gold, 3) == 1.0
    assert hit_at_k(contexts, gold, 10) == 1.0
    assert hit_at_k(contexts, gold, 0) == 0.0
    assert evidence_recall_at_k(contexts, gold, 2) == 0.0
    assert evidence_recall_at_k(contexts, gold, 3) == 1.0
    assert answer_hit_at_k(contexts, ["42"], 2) == 0.0
    assert answer_hit_at_k(contexts, ["42"], 3) == 1.0
    assert reciprocal_rank(contexts, gold) == pytest.approx(1 / 3)
    assert reciprocal_rank(contexts, gold, k=2) == 0.0
    with pytest.raises(ValueError):
        hit_at_k(contexts, gold, -1)


def test_reciprocal_rank_uses_the_first_holding_context():
    gold = [GoldSpan("a", 10, 20), GoldSpan("a", 200, 210)]
    contexts = [ctx("a", 15, 25), ctx("a", 195, 215), ctx("a", 0, 30)]
    assert reciprocal_rank(contexts, gold) == 0.5


# --- answers ------------------------------------------------------------------------------------


def test_answer_folding():
    contexts = [ctx("a", 0, 30, "She moved to New\n  York in 1990.")]
    assert answer_hit_at_k(contexts, ["new york"], 1) == 1.0
    assert answer_hit_at_k(contexts, ["New  York"], 1) == 1.0
    assert answer_hit_at_k(contexts, ["NEW YORK IN 1990"], 1) == 1.0
    assert answer_hit_at_k(contexts, ["Boston", "new york"], 1) == 1.0
    assert answer_hit_at_k(contexts, ["newyork"], 1) == 0.0
    assert normalize_answer_text("  Straße\t\n X ") == "strasse x"


# --- redundancy ---------------------------------------------------------------------------------


def test_duplicated_chars():
    assert duplicated_chars([]) == 0
    assert duplicated_chars([ctx("a", 0, 10), ctx("a", 10, 20), ctx("b", 0, 10)]) == 0
    assert duplicated_chars([ctx("a", 0, 10), ctx("a", 5, 20)]) == 5
    # A character covered three times still counts once.
    assert duplicated_chars([ctx("a", 0, 10), ctx("a", 0, 10), ctx("a", 5, 10)]) == 10
    # Same range in two documents is not a duplicate.
    assert duplicated_chars([ctx("a", 0, 10), ctx("b", 0, 10)]) == 0


def test_duplicated_tokens():
    contexts = [ctx("a", 0, 10), ctx("a", 5, 25), ctx("b", 0, 10)]
    # Context 2 repeats 5 of its 20 chars -> a quarter of its 8 tokens.
    assert duplicated_tokens(contexts, [3, 8, 4]) == pytest.approx(2.0)
    assert duplicated_tokens([ctx("a", 0, 10), ctx("a", 10, 20)], [3, 3]) == 0.0
    with pytest.raises(ValueError):
        duplicated_tokens(contexts, [1, 2])


# --- aggregation -------------------------------------------------------------------------------


def test_percentile_matches_numpy():
    values = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0]
    for p in (0, 10, 50, 95, 100):
        assert percentile(values, p) == pytest.approx(np.percentile(values, p))
    assert percentile([None, 4.0, float("nan")], 50) == 4.0
    assert percentile([], 50) is None
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_aggregate_ignores_none_and_reports_distributions():
    rows = [
        {"query_id": "q1", "hit@5": 1.0, "rr": 1.0, "latency_ms": 10.0, "tokens": 100},
        {"query_id": "q2", "hit@5": 0.0, "rr": 0.0, "latency_ms": 30.0, "tokens": 300},
        {"query_id": "q3", "hit@5": None, "rr": None, "latency_ms": 20.0, "tokens": 200},
        {"query_id": "q4", "hit@5": True, "rr": 0.5, "latency_ms": 40.0, "tokens": 400},
    ]
    summary = aggregate(rows)
    assert summary["queries"] == 4
    assert summary["hit@5"] == pytest.approx(2 / 3)
    assert summary["hit@5_n"] == 3
    assert summary["rr"] == pytest.approx(0.5)
    assert summary["latency_ms"] == pytest.approx(25.0)
    assert summary["latency_ms_p50"] == pytest.approx(25.0)
    assert summary["latency_ms_p95"] == pytest.approx(np.percentile([10, 20, 30, 40], 95))
    assert summary["tokens_p50"] == pytest.approx(250.0)
    assert "query_id" not in summary
    assert "hit@5_p50" not in summary
    assert aggregate([{"recall": None}]) == {"queries": 1, "recall": None, "recall_n": 0}
    assert aggregate([]) == {"queries": 0}


def test_spans_validate_their_ranges():
    with pytest.raises(ValueError):
        ContextSpan("a", 10, 5, "")
    with pytest.raises(ValueError):
        GoldSpan("a", -1, 5)
