"""Sentence values: how likely each candidate sentence is to hold the evidence. Pure numpy.

Every candidate sentence (the neighbourhoods of the fused hits, windowrag.candidate_sentences)
comes with signals the database already holds: its own cosine similarity to the query, its
BM25 score, its fused rank when it is a hit. A small logistic model turns them into the
probability that the sentence holds evidence; the weights were fitted once on the dev sets
(benchmarks/fit_sentence_values.py, its report in docs/evaluation.md) and are constants here.

Most features are relative to the query's own candidates (how far below the best cosine, the
share of the best BM25), so that the value does not depend on how a model spreads its cosines;
the absolute best cosine, and how far it rises above the query's similarity to everyday text
(embed/background.py), are kept apart as the query's *relevance* (abstention).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "FEATURES", "RELEVANCE_FEATURES", "RELEVANCE_WEIGHTS", "TYPICAL_BACKGROUND", "WEIGHTS", "CandidateSentence", "Lead",
    "feature_matrix", "fold_reranker_scores", "query_relevance", "relevance_features", "sentence_probabilities",
]


@dataclass(frozen=True, slots=True)
class Lead:
    """What a context that starts at a list item or table row is sent with in front, then a line
    break (assemble.context.LEAD_SEPARATOR): the lead-in sentence of its list (a nested item: its
    parent item), or its table's header row (windowrag.candidate_sentences, 0030). The |---| row is not sent: in BERT tokens
    each dash is one, and the header and the rows read alike without it."""

    ordinal: int
    start_char: int
    end_char: int
    tokens: int  # its own and the line break's


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
    window_cosine: float | None  # the mean vector of it and the candidates before and after it in its section
    bm25: float
    fused_rank: int | None  # None: not among the fused hits
    # the query's lexemes this sentence holds, with their idf in the collection
    terms: tuple[tuple[str, float], ...] = ()
    page: int | None = None
    # tokens of the document's text between it and the next sentence (Markdown markers, tags):
    # sent when a run holds both (0 for whitespace)
    gap_tokens: int = 0
    kind: str = "sentence"  # the unit's kind (parse/types.py UNIT_KINDS); a heading has no value of its own
    lead: Lead | None = None  # sent in front of a context that starts here (a list's lead-in, a table's header)


FEATURES = (
    "bias", "cosine_gap", "cosine_z", "bm25_share", "hit", "hit_log_rank", "neighbour_gap",
    "neighbour_bm25_share", "near_top_hit", "section_gap", "section_hits", "log_tokens",
    "window_gap", "term_coverage", "window_term_coverage",
)

# Fitted by benchmarks/fit_sentence_values.py (see its report); order of FEATURES.
WEIGHTS = np.array([-6.5528, 1.7613, 0.1903, 2.7185, 0.5212, -0.3306, 1.4043, -0.9431, 0.3694, 3.1108, 0.3964,
                    0.2009, 8.1690, -1.1209, 3.3738])


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
    x[:, 13], x[:, 14] = _term_coverage(candidates, adjacent)
    return x


def _term_coverage(candidates: Sequence[CandidateSentence], adjacent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Share of the query's idf mass (terms found among the candidates) that each sentence holds,
    alone and together with its adjacent neighbours: questions often spread over two sentences."""
    idf: dict[str, float] = {}
    for c in candidates:
        idf.update(c.terms)
    total = sum(idf.values())
    n = len(candidates)
    if total <= 0:
        return np.zeros(n), np.zeros(n)
    sets = [{term for term, _ in c.terms} for c in candidates]
    own = np.asarray([sum(idf[t] for t in terms) for terms in sets]) / total
    joined = np.zeros(n)
    for i in range(n):
        union = set(sets[i])
        if i > 0 and adjacent[i]:
            union |= sets[i - 1]
        if i + 1 < n and adjacent[i + 1]:
            union |= sets[i + 1]
        joined[i] = sum(idf[t] for t in union) / total
    return own, joined


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


RELEVANCE_FEATURES = ("bias", "best_cosine", "best_window_cosine", "best_term_share", "best_window_term_share",
                      "cosine_margin", "cosine_over_background", "window_cosine_over_background",
                      "best_sentence_value")
# Fitted by benchmarks/fit_sentence_values.py on in-corpus against out-of-corpus dev questions.
RELEVANCE_WEIGHTS = np.array([-11.2403, 2.0194, 3.0520, 2.4764, 5.0350, -1.8989, 4.6575, 5.6901, 5.4556])
# The mean background similarity of the dev questions (in and out of corpus), used when unknown.
TYPICAL_BACKGROUND = 0.35


def relevance_features(candidates: Sequence[CandidateSentence], *, query_idf: float,
                       background: float | None = None, probabilities: np.ndarray | None = None) -> np.ndarray:
    """Absolute signals of how well the best candidates answer: cosines, the share of the query's
    whole idf mass (terms the collection never holds included) that they match, how far the
    best cosines rise above the query's BACKGROUND similarity (embed/background.py; None: the
    typical value of the dev questions, for a query vector the library did not embed), and the
    best sentence value (PROBABILITIES, the sentence model's; computed when None): an answer is
    one sentence that stands out on all signals at once, which the cosines and term shares
    alone do not say."""
    if not candidates:
        return np.zeros(len(RELEVANCE_FEATURES)) + np.eye(len(RELEVANCE_FEATURES))[0]
    cosines = [c.cosine for c in candidates if c.cosine is not None]
    cos = max(cosines, default=0.0)
    # an answer stands out from its neighbourhood; off-topic candidates are all alike
    margin = cos - float(np.median(cosines)) if cosines else 0.0
    window = max((c.window_cosine for c in candidates if c.window_cosine is not None), default=0.0)
    own = max(sum(idf for _, idf in c.terms) for c in candidates)
    joined = 0.0
    for i, c in enumerate(candidates):
        terms = dict(c.terms)
        for j in (i - 1, i + 1):
            if 0 <= j < len(candidates):
                other = candidates[j]
                if (other.document_key, other.section_id) == (c.document_key, c.section_id) \
                        and abs(other.ordinal - c.ordinal) == 1:
                    terms.update(other.terms)
        joined = max(joined, sum(terms.values()))
    total = query_idf if query_idf > 0 else 1.0
    if not cosines:  # BM25 alone: no cosine to set against the background
        over, window_over = 0.0, 0.0
    else:
        base = TYPICAL_BACKGROUND if background is None else background
        over, window_over = cos - base, window - base
    if probabilities is None:
        probabilities = sentence_probabilities(feature_matrix(candidates))
    best_value = float(np.max(probabilities))
    return np.asarray([1.0, cos, window, own / total, joined / total, margin, over, window_over, best_value])


def query_relevance(candidates: Sequence[CandidateSentence], *, query_idf: float, background: float | None = None,
                    probabilities: np.ndarray | None = None, weights: np.ndarray = RELEVANCE_WEIGHTS) -> float:
    """P(the corpus answers the query), from relevance_features; compared with min_relevance."""
    features = relevance_features(candidates, query_idf=query_idf, background=background, probabilities=probabilities)
    z = float(np.clip(features @ weights, -30.0, 30.0))
    return 1.0 / (1.0 + np.exp(-z))


def fold_reranker_scores(probabilities: np.ndarray, spans: Sequence[tuple[int, int]],
                         scores: Sequence[float]) -> np.ndarray:
    """Sentence probabilities with the cross-encoder's say: a sentence inside a scored span
    (candidate indexes start..end-1) takes the geometric mean of its own probability and the
    span's cross-encoder probability; a sentence outside every scored span is held to at most
    the lowest span score, as the cross-encoder saw better text elsewhere."""
    folded = np.asarray(probabilities, dtype=np.float64).copy()
    if not spans:
        return folded
    scored = np.zeros(folded.size, dtype=bool)
    for (start, end), score in zip(spans, scores):
        folded[start:end] = np.sqrt(folded[start:end] * float(score))
        scored[start:end] = True
    folded[~scored] = np.minimum(folded[~scored], float(min(scores)))
    return folded
