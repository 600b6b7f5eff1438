"""Abstention decisions (segment/abstain.py): pure, no database or model."""
from __future__ import annotations

import pytest

from windowrag_pg.pipeline import PipelineOptions
from windowrag_pg.retrieve.retriever import QueryError
from windowrag_pg.segment.abstain import abstain_reason, needs_verification, sentences_to_verify, verify_passages
from windowrag_pg.segment.values import CandidateSentence


def test_the_band_the_cross_encoder_decides():
    band = dict(min_relevance=0.05, verify_below=0.4)
    assert not needs_verification(0.049, **band)
    assert needs_verification(0.05, **band) and needs_verification(0.399, **band)
    assert not needs_verification(0.4, **band)
    # no abstention at all, or the relevance model alone: never checked
    assert not needs_verification(0.2, min_relevance=None, verify_below=0.4)
    assert not needs_verification(0.2, min_relevance=0.05, verify_below=None)


def test_abstain_reason_follows_the_band():
    band = dict(min_relevance=0.05, verify_below=0.4, verify_min_score=0.018)
    assert "below min_relevance" in abstain_reason(0.01, **band)
    assert abstain_reason(0.6, **band) is None  # sure enough: no check, no scores needed
    assert abstain_reason(0.2, verify_scores=[0.01, 0.5], **band) is None  # one sentence answers
    refused = abstain_reason(0.2, verify_scores=[0.017, 0.001], **band)
    assert "cross-encoder" in refused and "0.0170" in refused
    assert abstain_reason(0.2, verify_scores=[], **band) is not None  # nothing to read: nothing answers
    with pytest.raises(ValueError, match="scores"):
        abstain_reason(0.2, **band)
    assert abstain_reason(0.0, min_relevance=None, verify_below=0.4) is None
    # the relevance model alone: one threshold
    assert abstain_reason(0.16, min_relevance=0.17, verify_below=None) is not None
    assert abstain_reason(0.18, min_relevance=0.17, verify_below=None) is None


def test_sentences_to_verify_are_the_most_valuable():
    assert sentences_to_verify([0.1, 0.9, 0.3, 0.9]) == [1, 3]  # ties: document order
    assert sentences_to_verify([0.4]) == [0]
    assert sentences_to_verify([]) == []
    assert sentences_to_verify([0.1, 0.2, 0.3], count=3) == [2, 1, 0]


def _sentence(document, section, ordinal, start, end):
    return CandidateSentence(document_key=document, section_id=section, ordinal=ordinal, start_char=start,
                             end_char=end, token_count=10, cosine=0.5, window_cosine=0.5, bm25=0.0, fused_rank=None)


def test_verify_passages_read_each_sentence_with_its_neighbouring_candidates():
    sentences = [
        _sentence(1, 10, 0, 0, 40), _sentence(1, 10, 1, 41, 90), _sentence(1, 10, 2, 91, 130),
        _sentence(1, 11, 3, 131, 170),  # the next section: never read across
        _sentence(1, 10, 5, 180, 220),  # ordinal 4 is not a candidate: no gap is bridged
        _sentence(2, 20, 1, 0, 50),  # the same ordinals in another document are not neighbours
    ]
    assert verify_passages(sentences, [1]) == [(1, 0, 130)]
    assert verify_passages(sentences, [2, 0]) == [(1, 41, 130), (1, 0, 90)]
    assert verify_passages(sentences, [3]) == [(1, 131, 170)]
    assert verify_passages(sentences, [4, 5]) == [(1, 180, 220), (2, 0, 50)]
    assert verify_passages(sentences, []) == []


@pytest.mark.parametrize("bad", [dict(verify_below=1.5), dict(verify_below=True), dict(verify_min_score=None),
                                 dict(verify_min_score=-0.1), dict(verify_below="0.4")])
def test_verify_options_are_checked_by_name(bad):
    name = next(iter(bad))
    with pytest.raises(QueryError, match=name):
        PipelineOptions(**bad)
