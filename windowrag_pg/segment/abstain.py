"""Whether to send anything for a query: the relevance model, and the cross-encoder where it is
unsure. Pure: the pipeline runs the cross-encoder and hands its scores in.

    relevance < min_relevance                   → abstain
    min_relevance ≤ relevance < verify_below    → the cross-encoder reads the query's
                                                  VERIFY_SENTENCES most valuable sentences, each
                                                  with its neighbours among the candidates;
                                                  abstain when none scores verify_min_score
    relevance ≥ verify_below                    → send

The relevance model (segment/values.py) reads cosines and term shares: an off-topic question
that shares words and a register with the collection (a general-knowledge question asked of a
company handbook) can look as relevant as a hard in-corpus one. The cross-encoder reads the
question against the text itself and tells them apart, but costs 30-75 ms for the two passages
on 2 cores, so it is asked only in the band where the model is unsure (3-8% of the in-corpus dev
questions; docs/evaluation.md, "Abstention"). Each sentence is read with the candidates beside it
(what a lone sentence leaves to its neighbours): on the dev sets that refused more out-of-corpus
questions for the same share of in-corpus ones kept.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .values import CandidateSentence

__all__ = ["VERIFY_SENTENCES", "abstain_reason", "needs_verification", "sentences_to_verify", "verify_passages"]

# the cross-encoder reads this many passages: the most valuable sentences, each with its neighbours
VERIFY_SENTENCES = 2


def needs_verification(relevance: float, *, min_relevance: float | None, verify_below: float | None) -> bool:
    """True when RELEVANCE falls in the band the cross-encoder decides."""
    if min_relevance is None or verify_below is None:
        return False
    return min_relevance <= relevance < verify_below


def sentences_to_verify(probabilities: Sequence[float] | np.ndarray, *, count: int = VERIFY_SENTENCES) -> list[int]:
    """Indexes of the COUNT most valuable candidates, best first (ties: document order)."""
    p = np.asarray(probabilities, dtype=np.float64)
    return [int(i) for i in np.argsort(-p, kind="stable")[:count]]


def verify_passages(sentences: Sequence[CandidateSentence], chosen: Sequence[int]) -> list[tuple[int, int, int]]:
    """(document key, start_char, end_char) of the passage the cross-encoder reads for each CHOSEN
    candidate: the sentence with the candidates just before and after it in its section (the
    ordinals next to its own), so at most three sentences and never across a section."""
    by_place = {(s.document_key, s.section_id, s.ordinal): s for s in sentences}
    passages = []
    for index in chosen:
        sentence = sentences[index]
        place = (sentence.document_key, sentence.section_id)
        before = by_place.get((*place, sentence.ordinal - 1), sentence)
        after = by_place.get((*place, sentence.ordinal + 1), sentence)
        passages.append((sentence.document_key, before.start_char, after.end_char))
    return passages


def abstain_reason(relevance: float, *, min_relevance: float | None, verify_below: float | None = None,
                   verify_scores: Sequence[float] | None = None, verify_min_score: float = 0.0) -> str | None:
    """Why nothing is sent (None: send). VERIFY_SCORES are the cross-encoder's probabilities for
    the sentences_to_verify, needed when needs_verification says so."""
    if min_relevance is None:
        return None
    if relevance < min_relevance:
        return (f"relevance {relevance:.3f} is below min_relevance {min_relevance}: "
                "nothing in the collection looks like an answer")
    if not needs_verification(relevance, min_relevance=min_relevance, verify_below=verify_below):
        return None
    if verify_scores is None:
        raise ValueError(f"relevance {relevance:.3f} is below verify_below {verify_below}: "
                         "the cross-encoder's scores of the best sentences are needed")
    return _refused_by_cross_encoder(verify_scores, verify_min_score,
                                     f"relevance {relevance:.3f} is below verify_below {verify_below} and")


def lexical_abstain_reason(verify_scores: Sequence[float] | None, *, min_relevance: float | None,
                           verify_min_score: float) -> str | None:
    """Why nothing is sent in mode 'bm25' (None: send): the relevance model reads cosines, which
    that mode has not (it put nearly every question below min_relevance), so the cross-encoder's
    scores of the best sentences decide alone; without them (verify_below None) nothing is refused."""
    if min_relevance is None or verify_scores is None:
        return None
    return _refused_by_cross_encoder(verify_scores, verify_min_score,
                                     "mode 'bm25' has no cosines for the relevance model, and")


def _refused_by_cross_encoder(verify_scores: Sequence[float], verify_min_score: float, why: str) -> str | None:
    best = max(verify_scores, default=0.0)
    if best < verify_min_score:
        return (f"{why} the cross-encoder scores the best sentences at most {best:.4f} "
                f"(verify_min_score {verify_min_score}): nothing in the collection answers")
    return None

