"""Evaluation metrics on hand-made cases with known answers."""
from __future__ import annotations

import numpy as np
import pytest

from windowrag_pg.evaluation.metrics import (
    ContextSpan,
    GoldSpan,
    aggregate,
    ann_recall_at_k,
    answer_hit_at_k,
    duplicated_chars,
    duplicated_tokens,
    evidence_recall_at_k,
    hit_at_k,
    normalize_answer_text,
    percentile,
    reciprocal_rank,
    wrong_section_at_1,
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


# --- wrong_section@1 ---------------------------------------------------------------------------


def test_wrong_section_at_1_on_hand_made_sections():
    # document "a": sections [0, 100) and [100, 250); the gold sits in the second
    gold = [GoldSpan("a", 120, 140)]
    assert wrong_section_at_1(ctx("a", 100, 250), gold) == 0.0
    assert wrong_section_at_1(ctx("a", 0, 100), gold) == 1.0
    # right section of the wrong document
    assert wrong_section_at_1(ctx("b", 100, 250), gold) == 1.0
    # a gold span across the boundary is held by both sections it touches
    across = [GoldSpan("a", 90, 110)]
    assert wrong_section_at_1(ctx("a", 0, 100), across) == 0.0
    assert wrong_section_at_1(ctx("a", 100, 250), across) == 0.0
    # touching is not holding: [100, 250) shares no character with [80, 100)
    assert wrong_section_at_1(ctx("a", 100, 250), [GoldSpan("a", 80, 100)]) == 1.0
    # an empty gold span counts by its position; any gold span held is enough
    assert wrong_section_at_1(ctx("a", 100, 250), [GoldSpan("a", 150, 150)]) == 0.0
    assert wrong_section_at_1(ctx("a", 0, 100), [GoldSpan("b", 5, 9), GoldSpan("a", 5, 9)]) == 0.0
    # no section info: the whole document stands for the section
    assert wrong_section_at_1(ctx("a", 0, 2**31 - 1), gold) == 0.0
    # not measurable: no gold, or nothing returned
    assert wrong_section_at_1(ctx("a", 0, 100), []) is None
    assert wrong_section_at_1(None, gold) is None


# --- token budget of the baselines (evaluation/budget.py) ---------------------------------------


def test_tokens_to_keep_fills_in_rank_order_and_cuts_the_first_that_does_not_fit():
    from windowrag_pg.evaluation.budget import tokens_to_keep

    assert tokens_to_keep([100, 200, 300], 1000) == [100, 200, 300]
    assert tokens_to_keep([100, 200, 300], 350) == [100, 200, 50]
    assert tokens_to_keep([100, 200, 300], 300) == [100, 200, 0]
    assert tokens_to_keep([500, 10], 256) == [256, 0]  # not "skip the big one, take the small"
    assert tokens_to_keep([5, 7], None) == [5, 7]
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError):
            tokens_to_keep([1], bad)


def _contexts(texts, doc_text):
    from windowrag_pg.assemble.context import AssembledContext, Citation

    out = []
    for start, end in texts:
        citation = Citation(document_id="d", title=None, section_path=(), start_char=start, end_char=end,
                            first_ordinal=0, last_ordinal=0)
        out.append(AssembledContext(citation=citation, text=doc_text[start:end], score=1.0, token_count=0,
                                    document_key=1))
    return out


DOC = ("The unbelievably overcomplicated tokenization of antidisestablishmentarianism, "
       "e.g. résumé-writing (v2.0), isn't trivial!  Hyphen-ated words—and em dashes—split oddly. "
       "Numbers like 3.14159 and 1,000,000 too.") * 3


@pytest.mark.parametrize("budget", [1, 7, 23, 40, 64, 100, 1000])
def test_cut_contexts_never_exceeds_the_budget_and_cuts_at_a_token_boundary(embedder, budget):
    from windowrag_pg.evaluation.budget import cut_contexts

    ranges = [(0, 160), (90, 300), (300, len(DOC))]  # overlapping, as no-merge windows are
    contexts = _contexts(ranges, DOC)
    whole = embedder.count_tokens([c.text for c in contexts])
    kept = cut_contexts(contexts, budget=budget, token_offsets=embedder.token_offsets)
    counted = embedder.count_tokens([c.text for c in kept]) if kept else []
    assert sum(counted) <= budget
    assert [c.token_count for c in kept] == counted  # the reported count is the tokenizer's
    assert sum(counted) == min(budget, sum(whole))  # fills the budget: nothing left unused
    for i, (context, original) in enumerate(zip(kept, contexts)):
        # a prefix of the original, its citation still the document's characters
        assert original.text.startswith(context.text)
        assert context.citation.start_char == original.citation.start_char
        assert DOC[context.citation.start_char:context.citation.end_char] == context.text
        if len(context.text) < len(original.text):
            assert i == len(kept) - 1  # only the last one is cut
            # at a token boundary: the cut ends where a token of the original ends
            ends = [end for _, end in embedder.token_offsets(original.text)]
            assert len(context.text) in ends
    assert cut_contexts(contexts, budget=None, token_offsets=embedder.token_offsets) == contexts


def test_ann_recall_counts_the_exact_rows_found_among_the_first_k():
    assert ann_recall_at_k([1, 2, 3, 4, 5], [5, 4, 3, 2, 1], 5) == 1.0  # order within k does not matter
    assert ann_recall_at_k([1, 2, 3, 9, 8], [1, 2, 3, 4, 5], 5) == 0.6
    assert ann_recall_at_k([1, 2, 3, 4, 5, 6], [1, 7, 8, 9, 10, 6], 5) == 0.2  # only the first k of each
    # a row asked as its own query: left out of both lists, the next one counts instead
    assert ann_recall_at_k([7, 1, 2, 3, 4, 5], [7, 1, 2, 3, 4, 5], 5, leave_out=7) == 1.0
    assert ann_recall_at_k([1, 2, 3, 4, 5, 6], [7, 1, 2, 3, 4, 5], 5, leave_out=7) == 1.0
    assert ann_recall_at_k([7, 1, 2, 3, 4, 6], [7, 1, 2, 3, 4, 5], 5, leave_out=7) == 0.8
    assert ann_recall_at_k([1, 2], [1, 2], 5) == 1.0  # fewer rows than k: out of what exists


@pytest.mark.parametrize("k", [0, -1, 2.5, None])
def test_ann_recall_refuses_a_bad_k(k):
    with pytest.raises(ValueError, match="k must be a positive integer"):
        ann_recall_at_k([1], [1], k)


def test_ann_recall_needs_an_exact_row():
    with pytest.raises(ValueError, match="no row to compare"):
        ann_recall_at_k([1], [7], 5, leave_out=7)
