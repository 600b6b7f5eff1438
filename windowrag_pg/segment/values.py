"""Sentence values: how likely each candidate sentence is to hold the evidence. Pure numpy.

Every candidate sentence (the neighbourhoods of the fused hits, windowrag.candidate_sentences)
comes with signals the database already holds: its own cosine similarity to the query, its
BM25 score, its fused rank when it is a hit. A small logistic model turns them into the
probability that the sentence holds evidence; the weights were fitted once on the dev sets
(benchmarks/fit_sentence_values.py, its report in docs/evaluation.md) and are constants here.

Most features are relative to the query's own candidates (how far below the best cosine, the
share of the best BM25), so that the value does not depend on how a model spreads its cosines;
the absolute best cosine is kept apart as the query's *relevance* (abstention).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["FEATURES", "WEIGHTS", "CandidateSentence", "feature_matrix", "sentence_probabilities"]


@dataclass(frozen=True, slots=True)
class CandidateSentence:
    """One sentence that could be sent, with its signals (a row of windowrag.candidate_sentences)."""

    document_key: int
    section_id: int
    ordinal: int
    start_char: int
    end_char: int
    token_count: int
    cosine: float | None  # None in BM25-only mode
    window_cosine: float | None  # the mean vector of the sentence and its two neighbours
    bm25: float
    fused_rank: int | None  # None: not among the fused hits
    page: int | None = None


FEATURES = (
    "bias", "cosine_gap", "cosine_z", "bm25_share", "hit", "hit_log_rank", "neighbour_gap",
    "neighbour_bm25_share", "near_top_hit", "section_gap", "section_hits", "log_tokens",
    "window_gap",
)

# Fitted by benchmarks/fit_sentence_values.py (see its report); order of FEATURES.
WEIGHTS = np.zeros(len(FEATURES))


def feature_matrix(candidates: Sequence[CandidateSentence], *, top_hits: int = 5) -> np.ndarray:
    """(n, len(FEATURES)) features of candidates given in document order."""
    n = len(candidates)
    x = np.zeros((n, len(FEATURES)))
    if n == 0:
        return x
    cos = np.asarray([c.cosine if c.cosine is not None else 0.0 for c in candidates], dtype=np.float64)
    bm25 = np.asarray([c.bm25 for c in candidates], dtype=np.float64)
    rank = np.asarray([c.fused_rank if c.fused_rank is not None else 0 for c in candidates], dtype=np.float64)
    tokens = np.asarray([c.token_count for c in candidates], dtype=np.float64)
    hit = rank > 0
    gap = cos - cos.max()
    spread = cos.std() or 1.0
    best_bm25 = bm25.max()
    share = bm25 / best_bm25 if best_bm25 > 0 else np.zeros(n)
    # sections: candidates are in document order, so a section is one run of equal keys
    keys = [(c.document_key, c.section_id) for c in candidates]
    section = np.zeros(n, dtype=np.int64)
    for i in range(1, n):
        section[i] = section[i - 1] + (keys[i] != keys[i - 1])
    ordinal = np.asarray([c.ordinal for c in candidates], dtype=np.float64)
    adjacent = np.zeros(n, dtype=bool)  # candidate i follows i - 1 in the same section
    adjacent[1:] = (section[1:] == section[:-1]) & (ordinal[1:] == ordinal[:-1] + 1)
    x[:, 6] = _best_neighbour(gap, adjacent, missing=-1.0)
    x[:, 7] = _best_neighbour(share, adjacent, missing=0.0)
    # closeness (same section) to one of the best fused hits
    order = np.argsort(np.where(hit, rank, np.inf))[: min(top_hits, int(hit.sum()))]
    for i in order:
        same = section == section[i]
        x[:, 8] = np.maximum(x[:, 8], np.where(same, 1.0 / (1.0 + np.abs(ordinal - ordinal[i])), 0.0))
    best_in_section = np.full(section.max() + 1, -np.inf)
    np.maximum.at(best_in_section, section, gap)
    hits_in_section = np.zeros(section.max() + 1)
    np.add.at(hits_in_section, section, (hit & (rank <= 10)).astype(np.float64))
    x[:, 0] = 1.0
    x[:, 1] = gap
    x[:, 2] = (cos - cos.mean()) / spread
    x[:, 3] = share
    x[:, 4] = hit
    x[:, 5] = np.where(hit, np.log(np.maximum(rank, 1.0)), 0.0)
    x[:, 9] = best_in_section[section]
    x[:, 10] = np.log1p(hits_in_section[section])
    x[:, 11] = np.log1p(tokens)
    window = np.asarray([c.window_cosine if c.window_cosine is not None else 0.0 for c in candidates])
    x[:, 12] = window - window.max()
    return x


def _best_neighbour(signal: np.ndarray, adjacent: np.ndarray, *, missing: float) -> np.ndarray:
    """The larger signal of the previous and next candidate when adjacent, else MISSING."""
    best = np.full(signal.size, missing)
    best[1:] = np.where(adjacent[1:], signal[:-1], missing)
    best[:-1] = np.maximum(best[:-1], np.where(adjacent[1:], signal[1:], missing))
    return best


def sentence_probabilities(features: np.ndarray, weights: np.ndarray = WEIGHTS) -> np.ndarray:
    """P(sentence holds evidence) for each row of FEATURES."""
    z = np.clip(features @ weights, -30.0, 30.0)
    return 1.0 / (1.0 + np.exp(-z))
