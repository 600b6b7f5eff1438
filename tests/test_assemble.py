"""Context assembly: pure functions, no database."""
from __future__ import annotations

from dataclasses import replace

import pytest

from windowrag_pg.assemble.context import (
    AssembledContext, Citation, SentenceInfo, apply_token_budget, fit_sentences, fit_token_budget, format_context,
    order_contexts,
)


def sentences(tokens: list[int], first_ordinal: int = 0) -> list[SentenceInfo]:
    out, start = [], first_ordinal * 11
    for i, t in enumerate(tokens):
        out.append(SentenceInfo(ordinal=first_ordinal + i, start_char=start, end_char=start + 10, token_count=t, section_id=1))
        start += 11
    return out


def context(doc: str, score: float, tokens: list[int], first: int = 0, hits: tuple[int, ...] = ()) -> AssembledContext:
    sents = sentences(tokens, first)
    citation = Citation(document_id=doc, title=None, section_path=("A",), start_char=sents[0].start_char,
                        end_char=sents[-1].end_char, first_ordinal=first, last_ordinal=first + len(tokens) - 1)
    return AssembledContext(citation=citation, text=f"text of {doc}", score=score, token_count=sum(tokens),
                            document_key=1, sentences=sents, hits=[{"sentence_ordinal": h} for h in hits])


def test_fit_sentences_keeps_the_anchor_and_whole_sentences():
    sents = sentences([10, 10, 30, 10, 10], first_ordinal=100)
    lo, hi = fit_sentences(sents, budget=35, anchors={102})
    assert lo <= 2 <= hi
    assert sum(s.token_count for s in sents[lo:hi + 1]) <= 35
    # the anchor alone does not fit, another anchor does
    assert fit_sentences(sents, budget=25, anchors={102, 104}) == (3, 4)
    assert fit_sentences(sents, budget=5, anchors={102}) is None


def test_token_budget_keeps_order_and_trims_the_first_that_does_not_fit():
    contexts = [context("a", 0.9, [20, 20]), context("b", 0.8, [30, 30, 30], hits=(1,)), context("c", 0.7, [5])]

    def trim(ctx, remaining):
        span = fit_sentences(ctx.sentences, budget=remaining, anchors={h["sentence_ordinal"] for h in ctx.hits})
        if span is None:
            return None
        chosen = ctx.sentences[span[0]: span[1] + 1]
        return context(ctx.citation.document_id, ctx.score, [s.token_count for s in chosen], chosen[0].ordinal)

    kept = apply_token_budget(contexts, budget=75, trim=trim)
    assert [c.citation.document_id for c in kept] == ["a", "b", "c"]
    assert [c.token_count for c in kept] == [40, 30, 5]
    assert sum(c.token_count for c in kept) <= 75
    assert apply_token_budget(contexts, budget=None, trim=trim) == contexts
    with pytest.raises(ValueError):
        apply_token_budget(contexts, budget=0, trim=trim)


def test_order_by_document_position():
    contexts = [context("b", 0.9, [1], first=5), context("a", 0.5, [1], first=9), context("a", 0.1, [1], first=0)]
    by_position = order_contexts(contexts, order="document")
    assert [(c.citation.document_id, c.citation.first_ordinal) for c in by_position] == [("a", 0), ("a", 9), ("b", 5)]
    assert [c.score for c in order_contexts(contexts, order="score")] == [0.9, 0.5, 0.1]
    with pytest.raises(ValueError, match="order"):
        order_contexts(contexts, order="random")


def test_format_context_numbers_and_cites_blocks():
    block = format_context([context("doc-1", 0.9, [3]), context("doc-2", 0.5, [3])])
    assert block.startswith("[1] [doc-1] › A, chars 0–10\ntext of doc-1")
    assert "\n\n[2] [doc-2] › A" in block


def test_rerank_passage_reads_whole_sentences_around_the_hits():
    from windowrag_pg.pipeline import rerank_passage
    from windowrag_pg.retrieve.retriever import Context, Hit

    words = ["Alpha one.", "Beta two.", "Gamma three.", "Delta four.", "Epsilon five."]
    text = " ".join(words)
    sents, position = [], 0
    for i, word in enumerate(words):
        sents.append(SentenceInfo(ordinal=10 + i, start_char=100 + position, end_char=100 + position + len(word),
                                  token_count=4, section_id=1))
        position += len(word) + 1
    window = Context(document_id="d", title=None, section_path=[], start_char=100, end_char=100 + len(text),
                     text=text, score=1.0, hits=[Hit(13, 1, None, 0.1)], first_ordinal=10, last_ordinal=14,
                     token_count=20)
    assert rerank_passage(window, sents, None) == text
    assert rerank_passage(window, sents, 20) == text  # fits whole
    assert rerank_passage(window, sents, 8) in ("Gamma three. Delta four.", "Delta four. Epsilon five.")
    assert rerank_passage(window, sents, 4) == "Delta four."  # the hit sentence alone
    assert rerank_passage(window, sents, 2) == "Delta four."  # longer than the budget: the model truncates it


def test_rerank_count_follows_the_token_budget():
    from windowrag_pg.pipeline import rerank_count

    assert rerank_count([220] * 20, budget=1800, minimum=5) == 8      # short windows: many
    assert rerank_count([512] * 3, budget=1800, minimum=5) == 3       # all there are
    assert rerank_count([900, 900, 900], budget=1800, minimum=1) == 2  # long windows: few
    assert rerank_count([2000, 10], budget=1800, minimum=1) == 1       # never fewer than minimum
    assert rerank_count([100] * 30, budget=None, minimum=5) == 30      # no budget: every window


def _context(doc_text: str, spans: list[tuple[int, int]], score: float) -> AssembledContext:
    sentences = [SentenceInfo(ordinal=i, start_char=s, end_char=e, token_count=len(doc_text[s:e].split()), section_id=1)
                 for i, (s, e) in enumerate(spans)]
    start, end = spans[0][0], spans[-1][1]
    citation = Citation(document_id="d", title=None, section_path=(), start_char=start, end_char=end,
                        first_ordinal=0, last_ordinal=len(spans) - 1)
    return AssembledContext(citation=citation, text=doc_text[start:end], score=score,
                            token_count=sum(s.token_count for s in sentences), document_key=1, sentences=sentences,
                            hits=[{"sentence_ordinal": i} for i in range(len(spans))])


def words(texts):
    return [len(t.split()) for t in texts]


def test_fit_token_budget_counts_the_text_between_sentences():
    """A Markdown table's |---| row between two sentences is sent but was not counted."""
    text = "Rates are fixed. | --- | --- | --- | --- | --- | --- | Paris costs more. Lyon costs less."
    spans = [(0, 16), (55, 72), (73, 89)]
    best, other = _context(text, spans, 0.9), _context(text, spans[1:], 0.2)
    assert best.token_count == 9  # the sentences' own words: what the selection counted
    fitted = fit_token_budget([best, other], budget=20, count_tokens=words)  # 22 + 6 words as sent
    assert sum(c.token_count for c in fitted) == 19
    assert [c.score for c in fitted] == [0.9] and fitted[0].text == text[:72]  # the weaker context went first
    assert (fitted[0].citation.end_char, fitted[0].citation.last_ordinal) == (72, 1)
    assert fitted[0].hits == [{"sentence_ordinal": 0}, {"sentence_ordinal": 1}]
    plain = "One two three. Four five six."  # whitespace between: nothing to cut
    untouched = fit_token_budget([_context(plain, [(0, 14), (15, 29)], 0.5)], budget=6, count_tokens=words)
    assert untouched[0].text == plain and untouched[0].token_count == 6


def test_a_citation_names_one_page_once():
    one = Citation(document_id="d", title="T", section_path=(), start_char=0, end_char=9, first_ordinal=0,
                   last_ordinal=1, pages=(11,))
    assert one.label().endswith(", p. 11")  # was "p. 11-11"
    assert replace(one, pages=(3, 4)).label().endswith(", p. 3-4")


def test_a_citation_names_a_title_that_is_also_the_first_heading_once():
    citation = Citation(document_id="handbook.md", title="Acme  handbook", section_path=("Acme handbook", "Benefits"),
                        start_char=5, end_char=9, first_ordinal=1, last_ordinal=1)
    assert citation.label() == "Acme  handbook [handbook.md] › Benefits, chars 5–9"
    assert replace(citation, section_path=("Acme handbook",)).label() == "Acme  handbook [handbook.md], chars 5–9"
    # another first heading, or no title, keeps the whole path
    assert replace(citation, title="Guide").label() == "Guide [handbook.md] › Acme handbook › Benefits, chars 5–9"
    assert replace(citation, title=None).label() == "[handbook.md] › Acme handbook › Benefits, chars 5–9"
    # a title that is the id again is said once
    assert replace(citation, title="handbook.md").label() == "[handbook.md] › Acme handbook › Benefits, chars 5–9"


def test_shared_heading_path_and_run_section_path() -> None:
    from windowrag_pg.assemble.context import run_section_path, shared_heading_path

    assert shared_heading_path([("H", "Benefits", "Dental"), ("H", "Benefits", "Learning")]) == ("H", "Benefits")
    assert shared_heading_path([("H", "Benefits"), ("H", "Benefits", "Dental")]) == ("H", "Benefits")
    assert shared_heading_path([("A",), ("B",)]) == () and shared_heading_path([]) == ()
    one = SentenceInfo(1, 0, 5, 2, section_id=7, section_path=("H", "Equipment"))
    other = SentenceInfo(2, 6, 9, 2, section_id=8, section_path=("H", "Time off"))
    assert run_section_path([one], ("H",)) == ("H", "Equipment")
    assert run_section_path([one, other], ("H", "Equipment")) == ("H",)
    assert run_section_path([one, SentenceInfo(2, 6, 9, 2, section_id=8)], ("window",)) == ("window",)
