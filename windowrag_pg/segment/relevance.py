"""Sentence relevance for RSE from window-level scores. Pure: no I/O.

The reranker scores a whole window (never a lone sentence). Inside a window, relevance fades
with the distance to the nearest retrieved sentence, so that RSE can trim a weak window to its
core instead of taking it whole or not at all:

    relevance(sentence) = exp(−rank / decay_rate) · window_score · exp(−distance / proximity_scale)

where rank is the window's 0-based rank after reranking (dsRAG's rank decay), window_score is
the reranker probability in [0, 1] (or the fused score scaled to [0, 1] without a reranker), and
distance counts sentences to the nearest hit of the window.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def window_sentence_relevance(
    ordinals: Sequence[int],
    hit_ordinals: Sequence[int],
    *,
    window_score: float,
    rank: int,
    decay_rate: float,
    proximity_scale: float,
) -> np.ndarray:
    """Relevance of each sentence (by ordinal) of one window."""
    positions = np.asarray(ordinals, dtype=np.float64)
    hits = np.asarray(hit_ordinals, dtype=np.float64)
    if hits.size == 0:
        distance = np.zeros_like(positions)
    else:
        distance = np.min(np.abs(positions[:, None] - hits[None, :]), axis=1)
    base = float(np.exp(-rank / decay_rate)) * float(window_score)
    return base * np.exp(-distance / max(proximity_scale, 1e-9))
