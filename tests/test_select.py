"""Budget-first selection (segment/select.py) and sentence values (segment/values.py): pure, no database."""
from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowrag_pg.pipeline import PipelineOptions
from windowrag_pg.segment.select import (
    MIN_SPLIT_GAP, choose_segments, only_unsendable_match, run_breaks, select_runs, windows_by_value,
)
from windowrag_pg.segment.values import CandidateSentence, FEATURES, feature_matrix, sentence_probabilities


def brute_force(values, tokens, continues, budget, max_segments, gaps=None, leads=None):
    """Best (total value, tokens) over every subset of candidates that fits, each two adjacent
    sent candidates of a section in one run (the gap after the first spent), or in two when the
    gap is at least MIN_SPLIT_GAP; each run also spends the lead of its first candidate."""
    n, best = len(values), (0.0, 0)
    gaps = gaps or [0] * n
    leads = leads or [0] * n
    for mask in itertools.product([False, True], repeat=n):
        chosen = [i for i in range(n) if mask[i]]
        adjacent = [i for j, i in enumerate(chosen) if j > 0 and chosen[j - 1] == i - 1 and continues[i]]
        for joins in itertools.product([False, True], repeat=len(adjacent)):
            if any(not join and gaps[i - 1] < MIN_SPLIT_GAP for i, join in zip(adjacent, joins)):
                continue
            joined = [i for i, join in zip(adjacent, joins) if join]
            used = (sum(tokens[i] for i in chosen) + sum(gaps[i - 1] for i in joined)
                    + sum(leads[i] for i in chosen if i not in joined))
            runs = len(chosen) - len(joined)
            if chosen and used <= budget and runs <= max_segments:
                total = sum(values[i] for i in chosen)
                if total > best[0] + 1e-9 or (abs(total - best[0]) <= 1e-9 and used < best[1]):
                    best = (total, used)
    return best


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(-1, 1), st.integers(0, 40), st.booleans()), min_size=1, max_size=9),
       st.integers(1, 150), st.integers(1, 3))
def test_runs_are_the_exact_optimum_within_the_budget(cands, budget, max_segments):
    values = [round(v, 3) for v, _, _ in cands]
    tokens = [t for _, t, _ in cands]
    continues = [c for _, _, c in cands]
    runs = select_runs(values, tokens, continues, budget=budget, max_segments=max_segments)
    assert sum(r.tokens for r in runs) <= budget
    assert len(runs) <= max_segments
    for run in runs:  # a run never crosses a break (a section change or a gap in ordinals)
        assert all(continues[i] for i in range(run.start + 1, run.end))
        # nor starts or ends on a sentence worth nothing (a heading) or less, unless it costs nothing
        assert all(values[i] > 0 or tokens[i] == 0 for i in (run.start, run.end - 1))
    for a, b in zip(runs, runs[1:]):  # in document order, never overlapping
        assert a.end <= b.start
    assert sum(r.value for r in runs) == pytest.approx(brute_force(values, tokens, continues, budget, max_segments)[0])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(-1, 1), st.integers(0, 40), st.booleans(), st.integers(0, 30),
                          st.integers(0, 20)), min_size=1, max_size=8),
       st.integers(1, 150), st.integers(1, 3), st.booleans())
def test_runs_pay_for_the_text_between_their_sentences_and_their_lead(cands, budget, max_segments, with_leads):
    values = [round(v, 3) for v, *_ in cands]
    tokens, continues, gaps = ([c[i] for c in cands] for i in (1, 2, 3))
    leads = [c[4] for c in cands] if with_leads else None
    lead = leads or [0] * len(cands)
    runs = select_runs(values, tokens, continues, budget=budget, max_segments=max_segments, gaps=gaps, leads=leads)
    for run in runs:  # its sentences, the gaps inside it and the lead of its first sentence (no other's)
        assert run.tokens == lead[run.start] + sum(tokens[run.start:run.end]) + sum(gaps[run.start:run.end - 1])
    assert sum(r.tokens for r in runs) <= budget
    best = brute_force(values, tokens, continues, budget, max_segments, gaps, leads)
    assert sum(r.value for r in runs) == pytest.approx(best[0])
    windows = windows_by_value(values, tokens, continues, budget=budget, max_segments=max_segments, window=1,
                               gaps=gaps, leads=leads)
    for run in windows:
        assert run.tokens == lead[run.start] + sum(tokens[run.start:run.end]) + sum(gaps[run.start:run.end - 1])
    assert sum(r.tokens for r in windows) <= budget


def test_a_run_inside_a_list_pays_for_its_lead_in_or_starts_at_it():
    # a lead-in (20 tokens), then three list items; the third is the one that matters. Starting at
    # it costs its lead (the lead-in and the marker, 21 tokens); starting at the lead-in costs the
    # items between too. With 35 tokens the item comes with its lead; with 45 the item before it
    # too; with 60 the run starts at the lead-in itself (worth something, unlike a lead).
    values, tokens, continues = [0.2, 0.1, 0.1, 0.9], [20, 10, 10, 10], [False, True, True, True]
    leads, gaps = [0, 21, 21, 21], [1, 1, 1, 0]
    runs = select_runs(values, tokens, continues, budget=35, max_segments=2, gaps=gaps, leads=leads)
    assert [(r.start, r.end, r.tokens) for r in runs] == [(3, 4, 31)]
    runs = select_runs(values, tokens, continues, budget=45, max_segments=2, gaps=gaps, leads=leads)
    assert [(r.start, r.end, r.tokens) for r in runs] == [(2, 4, 42)]
    runs = select_runs(values, tokens, continues, budget=60, max_segments=2, gaps=gaps, leads=leads)
    assert [(r.start, r.end, r.tokens) for r in runs] == [(0, 4, 53)]
    # a lead that does not fit keeps its item out: nothing is sent without what it means
    assert select_runs([0.9], [10], [False], budget=25, max_segments=1, leads=[21]) == []


def test_markup_between_sentences_can_make_two_runs_cheaper_than_one():
    # a table's header and first row, a 60-token |---| rule between them, then a second row
    values, tokens, continues, gaps = [0.5, 0.5, 0.5], [20, 20, 20], [False, True, True], [60, 0, 0]
    runs = select_runs(values, tokens, continues, budget=70, max_segments=3, gaps=gaps)
    assert [(r.start, r.end, r.tokens) for r in runs] == [(0, 1, 20), (1, 3, 40)]  # the rule left out
    # blind to the gap, the one run of 60 tokens would be chosen, and send 120
    assert [(r.start, r.end) for r in select_runs(values, tokens, continues, budget=70, max_segments=3)] == [(0, 3)]
    # with one run allowed, the rule is not worth sending: two of the sentences instead of three
    runs = select_runs(values, tokens, continues, budget=70, max_segments=1, gaps=gaps)
    assert [(r.start, r.end, r.tokens) for r in runs] == [(1, 3, 40)]
    # a small gap (a list marker) is sent, or a sentence is left out: never two touching contexts
    # for less than a citation line costs
    runs = select_runs([0.5, 0.5], [20, 20], [False, True], budget=41, max_segments=2, gaps=[2, 0])
    assert [(r.end - r.start, r.tokens) for r in runs] == [(1, 20)]  # both with the marker: 42 tokens
    runs = select_runs([0.5, 0.5], [20, 20], [False, True], budget=41, max_segments=2,
                       gaps=[MIN_SPLIT_GAP, 0])
    assert [(r.start, r.end, r.tokens) for r in runs] == [(0, 1, 20), (1, 2, 20)]
    # also under a budget smaller than MIN_SPLIT_GAP (the gaps were capped at the budget first,
    # and such a gap no longer allowed two runs)
    runs = select_runs([0.5, 0.5], [0, 0], [False, True], budget=1, max_segments=2, gaps=[MIN_SPLIT_GAP, 0])
    assert [(r.start, r.end) for r in runs] == [(0, 1), (1, 2)]


@pytest.mark.parametrize("bad, message", [
    (dict(gaps=[1, 2]), "must be equal 1-d shapes"), (dict(gaps=[0, -1, 0]), "gaps must be >= 0"),
    (dict(gaps=[0.5, 0, 0]), "gaps must be whole numbers"), (dict(tokens=[1, -2, 3]), "tokens must be >= 0"),
    (dict(leads=[0, -1, 0]), "leads must be >= 0"), (dict(leads=[0, 0]), "leads \\(2,\\) must be equal"),
])
def test_bad_token_counts_are_named(bad, message):
    arguments = dict(values=[0.5, 0.5, 0.5], tokens=[1, 2, 3], continues=[False, True, True]) | bad
    with pytest.raises(ValueError, match=message):
        select_runs(**arguments, budget=10, max_segments=2)
    with pytest.raises(ValueError, match=message):
        windows_by_value(**arguments, budget=10, max_segments=2, window=1)
    huge = select_runs([0.5, 0.5], [5, 5], [False, True], budget=100, max_segments=1, gaps=[2 ** 62, 0])
    assert len(huge) == 1 and huge[0].tokens == 5  # a gap past any budget is never sent


def test_large_budgets_round_token_costs_up_and_never_exceed():
    rng = np.random.default_rng(0)
    values, tokens = rng.random(300), rng.integers(5, 60, 300)
    continues = rng.random(300) < 0.9
    for budget in (700, 1200, 2048, 5000):
        runs = select_runs(values, tokens, continues, budget=budget, max_segments=5)
        assert 0 < sum(r.tokens for r in runs) <= budget


def test_one_longer_segment_beats_two_fragments_when_segments_are_scarce():
    # section 1: two strong sentences around a weak one; section 2: one good sentence
    values = [0.6, -0.05, 0.6, 0.5]
    tokens = [10, 10, 10, 10]
    continues = run_breaks([(1, 1), (1, 1), (1, 1), (1, 2)], [0, 1, 2, 7])
    runs = select_runs(values, tokens, continues, budget=100, max_segments=2)
    assert [(r.start, r.end) for r in runs] == [(0, 3), (3, 4)]  # bridged, not [0], [2]
    # with segments to spare the weak sentence is left out
    runs = select_runs(values, tokens, continues, budget=100, max_segments=3)
    assert [(r.start, r.end) for r in runs] == [(0, 1), (2, 3), (3, 4)]


def test_nothing_worth_sending_gives_no_runs():
    assert select_runs([-0.1, -0.2], [5, 5], [False, True], budget=100, max_segments=5) == []
    assert select_runs([0.9], [50], [False], budget=10, max_segments=5) == []  # does not fit


@pytest.mark.parametrize("bad", [dict(budget=0), dict(budget=1.5), dict(max_segments=0)])
def test_bad_limits_are_refused(bad):
    arguments = dict(budget=10, max_segments=1) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        select_runs([1.0], [1], [False], **arguments)


def candidate(ordinal, cosine, *, section=1, document=1, tokens=20, rank=None, bm25=0.0, terms=(), kind="sentence"):
    return CandidateSentence(document_key=document, section_id=section, ordinal=ordinal, start_char=ordinal * 100,
                             end_char=ordinal * 100 + 90, token_count=tokens, cosine=cosine, window_cosine=cosine,
                             bm25=bm25, fused_rank=rank, terms=terms, kind=kind)


def test_a_heading_is_never_sent_alone_nor_at_the_edge_of_a_run():
    # sections 1 and 2 each open with a heading that matches the query best (as "Health
    # insurance" does a question on dental cover); the budget leaves room for both headings
    key = (("dental", 3.0), ("insur", 2.0))
    sentences = [candidate(0, 0.90, section=1, tokens=3, rank=1, bm25=6.0, terms=key, kind="heading"),
                 candidate(1, 0.70, section=1, tokens=20, rank=3, bm25=3.0, terms=key[:1]),
                 candidate(2, 0.55, section=1, tokens=20),
                 candidate(3, 0.88, section=2, tokens=3, rank=2, bm25=5.0, terms=key[1:], kind="heading"),
                 candidate(4, 0.52, section=2, tokens=20)]
    before = choose_segments([replace(s, kind="sentence") for s in sentences], query_idf=10.0, budget=26, max_segments=3)
    assert {(r.start, r.end) for r in before.runs} >= {(3, 4)}  # what a heading's own value did
    chosen = choose_segments(sentences, query_idf=10.0, budget=26, max_segments=3)
    assert [(r.start, r.end) for r in chosen.runs] == [(1, 2)]  # the body sentence, without its heading
    assert chosen.relevance == before.relevance  # the heading still says the corpus answers
    # inside a run that crosses it (clamp 'document': one key for the document), a heading is sent
    wide = choose_segments([replace(s, section_id=1) for s in sentences], query_idf=10.0, budget=100, max_segments=1)
    assert [(r.start, r.end) for r in wide.runs] == [(1, 5)]
    # nor as the centre of a fixed window (RSE off): a budget that leaves no room for its
    # neighbours sent the heading alone
    windows = choose_segments(sentences, query_idf=10.0, budget=26, max_segments=3, window=1)
    assert all((r.start, r.end) != (3, 4) for r in windows.runs) and windows.runs
    assert any((r.start, r.end) == (3, 4)
               for r in choose_segments([replace(s, kind="sentence") for s in sentences], query_idf=10.0, budget=26,
                                        max_segments=3, window=1).runs)
    # candidates that are all headings give no run
    assert choose_segments([sentences[0], sentences[3]], query_idf=10.0, budget=26, max_segments=3).runs == []


def test_values_rank_the_matching_sentence_first_and_its_neighbours_next():
    sentences = [candidate(o, 0.55, rank=None) for o in range(10)]
    sentences[5] = candidate(5, 0.85, rank=1, bm25=7.0, terms=(("rotat", 3.0), ("key", 2.0)))
    sentences[4] = candidate(4, 0.65, rank=3, bm25=2.0, terms=(("key", 2.0),))
    features = feature_matrix(sentences)
    assert features.shape == (10, len(FEATURES))
    p = sentence_probabilities(features)
    assert np.argmax(p) == 5
    assert p[4] > p[0] and p[6] > p[9]  # close to the best hit is worth more than far from it


def test_choose_segments_keeps_the_budget_and_the_section_limits():
    sentences = [candidate(o, 0.6 + 0.02 * (o % 5), section=1 + o // 6, rank=o + 1, tokens=30) for o in range(12)]
    chosen = choose_segments(sentences, query_idf=10.0, budget=100, max_segments=2)
    assert 0 < sum(r.tokens for r in chosen.runs) <= 100 and len(chosen.runs) <= 2
    for run in chosen.runs:
        assert len({sentences[i].section_id for i in range(run.start, run.end)}) == 1
    assert 0.0 <= chosen.relevance <= 1.0


def test_folded_values_change_the_selection_not_the_relevance():
    # the cross-encoder path selects again on folded values; whether the corpus answers stays
    # the sentence model's judgement (it is what min_relevance was calibrated on)
    sentences = [candidate(o, 0.6, rank=o + 1, tokens=30) for o in range(6)]
    first = choose_segments(sentences, query_idf=10.0, budget=60, max_segments=1)
    folded = np.zeros(6)
    folded[4] = 0.99  # the cross-encoder's favourite, away from the first choice
    again = choose_segments(sentences, query_idf=10.0, budget=60, max_segments=1, probabilities=folded,
                            relevance=first.relevance)
    assert any(r.start <= 4 < r.end for r in again.runs)
    assert again.relevance == first.relevance
    recomputed = choose_segments(sentences, query_idf=10.0, budget=60, max_segments=1, probabilities=folded)
    assert recomputed.relevance != first.relevance  # the best value is one of the relevance signals


def test_relevance_separates_an_answerable_query_from_an_off_topic_one():
    from windowrag_pg.segment.values import query_relevance

    answered = [candidate(o, 0.55, rank=o + 1) for o in range(8)]
    answered[3] = candidate(3, 0.86, rank=1, bm25=9.0, terms=(("dental", 4.0), ("plan", 2.5)))
    off_topic = [candidate(o, 0.45 + 0.01 * (o % 3), rank=o + 1) for o in range(8)]
    assert query_relevance(answered, query_idf=6.5) > 0.9
    assert query_relevance(off_topic, query_idf=9.0) < PipelineOptions().min_relevance
    assert query_relevance([], query_idf=0.0) < 0.01


@settings(max_examples=200, deadline=None)
@given(cands=st.lists(st.tuples(st.floats(-1, 1), st.integers(1, 60), st.booleans(), st.integers(0, 20)),
                     min_size=1, max_size=14),
       budget=st.integers(0, 300), max_segments=st.integers(1, 4), window=st.integers(0, 3))
def test_windows_by_value_keep_the_budget_the_runs_and_the_breaks(cands, budget, max_segments, window):
    values = np.array([c[0] for c in cands])
    tokens = np.array([c[1] for c in cands])
    continues = np.array([False] + [c[2] for c in cands[1:]])
    gaps = np.array([c[3] for c in cands])
    runs = windows_by_value(values, tokens, continues, budget=budget, max_segments=max_segments, window=window,
                            gaps=gaps)
    for r in runs:
        assert r.tokens == tokens[r.start:r.end].sum() + gaps[r.start:r.end - 1].sum()
    assert sum(r.tokens for r in runs) <= budget and len(runs) <= max_segments
    for a, b in zip(runs, runs[1:]):
        assert a.end <= b.start and not (a.end == b.start and continues[b.start])  # disjoint, not touching
    for r in runs:
        assert all(continues[r.start + 1:r.end])  # no run crosses a break
    best = int(np.argmax(values))
    if tokens[best] <= budget and values[best] > 0:  # the most valuable sentence is always sent when it fits
        assert any(r.start <= best < r.end for r in runs)
    assert all(values[r.start:r.end].max() > 0 for r in runs)  # a window's centre is worth more than nothing


def test_windows_by_value_send_fixed_windows_where_rse_sends_the_valuable_run():
    # one valuable sentence among weak neighbours: the window sends 3 each side, the exact
    # selection spends the same budget on the two valuable runs instead
    values = np.array([0.0, 0.0, 0.0, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.8, 0.7, 0.0])
    tokens = np.full(values.size, 10)
    continues = np.array([False] + [True] * (values.size - 1))
    fixed = windows_by_value(values, tokens, continues, budget=70, max_segments=2, window=3)
    assert [(r.start, r.end) for r in fixed] == [(0, 7)]
    exact = select_runs(values, tokens, continues, budget=70, max_segments=2)
    assert sum(r.value for r in exact) == pytest.approx(2.4)


def test_relevance_rises_with_the_best_sentence_value():
    # the same cosines and terms: a query whose best sentence stands out on every signal (a high
    # P(evidence)) is more likely answered than one whose candidates are all alike
    from windowrag_pg.segment.values import query_relevance

    found = [candidate(o, 0.55, rank=o + 1) for o in range(8)]
    found[3] = candidate(3, 0.70, rank=1, bm25=5.0, terms=(("notice", 3.0),))
    flat, standing_out = (query_relevance(found, query_idf=9.0, background=0.35, probabilities=np.full(8, p))
                          for p in (0.05, 0.9))
    assert flat < 0.5 < standing_out
    # without probabilities, the sentence model's own are used
    assert query_relevance(found, query_idf=9.0) == query_relevance(
        found, query_idf=9.0, probabilities=sentence_probabilities(feature_matrix(found)))


def test_relevance_falls_as_the_query_background_rises():
    # the same candidates mean less when the query is that close to everyday text anyway
    from windowrag_pg.segment.values import TYPICAL_BACKGROUND, query_relevance

    found = [candidate(o, 0.55, rank=o + 1) for o in range(8)]
    found[3] = candidate(3, 0.70, rank=1, bm25=5.0, terms=(("notice", 3.0),))
    plain, register = (query_relevance(found, query_idf=9.0, background=b) for b in (0.30, 0.45))
    assert plain > register + 0.1
    assert query_relevance(found, query_idf=9.0) == query_relevance(found, query_idf=9.0,
                                                                    background=TYPICAL_BACKGROUND)
    bm25_only = [candidate(o, None, rank=o + 1, bm25=3.0, terms=(("notice", 3.0),)) for o in range(4)]
    assert query_relevance(bm25_only, query_idf=6.0, background=0.30) == \
        query_relevance(bm25_only, query_idf=6.0, background=0.45)  # no cosine to compare


def test_gap_tokens_are_counted_or_bounded_from_above():
    """Gaps are tokenized when short; a huge one (a base64 image in raw HTML) and any gap without
    the collection's tokenizer count their non-space UTF-8 bytes, never fewer than their tokens."""
    from windowrag_pg.embed import get_embedder
    from windowrag_pg.retrieve.retriever import MAX_COUNTED_GAP, candidates_from_rows

    def row(ordinal, gap, lead=(None, None, None, None)):
        return (1, "doc", None, 1, [], ordinal, ordinal * 10, ordinal * 10 + 9, 5, None, 0.5, 0.5, 0.0, [], [],
                None, None, None, None, 3.0, gap, "sentence", *lead)

    image = '<img src="data:image/png;base64,' + "QUJD" * MAX_COUNTED_GAP + '">'
    gaps = ["\n\n- ", "</td>\n<td>", "|---|---|\n| é ", image, None]
    tokenizer = get_embedder().count_tokens
    read: list[str] = []

    def counting(texts):
        read.extend(texts)
        return tokenizer(texts)

    rows = [row(i, gap) for i, gap in enumerate(gaps)]
    counted = [c.gap_tokens for c in candidates_from_rows("q", rows, {}, count_tokens=counting).sentences]
    assert counted[:3] == tokenizer(gaps[:3]) and counted[4] == 0
    assert image not in read and counted[3] == len(image.replace(" ", "")) >= tokenizer([image])[0]
    bounded = [c.gap_tokens for c in candidates_from_rows("q", rows, {}).sentences]
    assert bounded == [1, 9, 12, counted[3], 0]  # "é" is two bytes
    assert all(b >= c for b, c in zip(bounded, counted))
    # a lead (a table's header row, 7 tokens) counts its own tokens and the line break after it
    rows = [row(0, None), row(1, None, (0, 0, 15, 7))]
    lead = candidates_from_rows("q", rows, {}, count_tokens=tokenizer).sentences[1].lead
    assert (lead.ordinal, lead.start_char, lead.end_char, lead.tokens) == (0, 0, 15, 8)


def test_a_lead_is_sent_once_and_never_beside_its_own_unit():
    """run_leads: two runs of one list share its lead-in (the more valuable is sent with it); a run after
    the one that holds the lead-in, or a table row after a run holding the header, gets none."""
    from windowrag_pg.segment.select import Run, run_leads
    from windowrag_pg.segment.values import Lead

    lead_in, header = Lead(0, 0, 20, 6), Lead(10, 200, 215, 5)

    def unit(ordinal, lead=None, document=1):
        return CandidateSentence(document_key=document, section_id=1, ordinal=ordinal, start_char=ordinal * 20,
                                 end_char=ordinal * 20 + 19, token_count=5, cosine=0.5, window_cosine=0.5, bm25=0.0,
                                 fused_rank=None, kind="list_item" if lead is lead_in else "table_row", lead=lead)

    candidates = [unit(2, lead_in), unit(3, lead_in), unit(5, lead_in), unit(10), unit(11, header),
                  unit(2, lead_in, document=2)]
    runs = [Run(0, 1, 0.5, 11), Run(2, 3, 0.5, 11), Run(3, 5, 0.5, 15), Run(5, 6, 0.5, 11)]
    assert run_leads(candidates, runs) == [lead_in, None, None, lead_in]  # another document's list: its own
    assert run_leads(candidates, [Run(4, 5, 0.5, 10)]) == [header]
    assert run_leads(candidates, []) == []
    # the more valuable of two runs of one list gets the lead-in (a tester found the header with the
    # least valuable context, the last sent)
    assert run_leads(candidates, [Run(0, 1, 0.2, 11), Run(2, 3, 0.9, 11)]) == [None, lead_in]


def test_only_an_empty_sections_heading_matching_is_told_apart_from_a_heading_over_text():
    empty_heading = candidate(0, 0.9, section=1, kind="heading")
    other = [candidate(1, 0.1, section=2, kind="heading"), candidate(2, 0.1, section=2)]
    cands = [empty_heading, *other]
    assert only_unsendable_match(cands, np.array([0.9, 0.01, 0.01]), min_relevance=0.05)
    assert not only_unsendable_match(cands, np.array([0.9, 0.01, 0.06]), min_relevance=0.05)  # a sentence matches too
    assert not only_unsendable_match(cands, np.array([0.9, 0.3, 0.01]), min_relevance=0.05)  # and a heading over text
    assert not only_unsendable_match(cands, np.array([0.9, 0.01, 0.01]), min_relevance=None)
    assert not only_unsendable_match(cands, np.array([0.01, 0.01, 0.01]), min_relevance=0.05)  # nothing matches
