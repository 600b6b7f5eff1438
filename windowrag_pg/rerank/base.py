"""The reranker interface shared by every cross-encoder backend.

A reranker reads (query, passage) pairs together and returns a relevance probability per
passage. Probabilities (sigmoid of the logit), rather than raw logits, let callers use one
absolute threshold across backends and queries.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np


class RerankError(ValueError):
    """Bad input to a reranker, or a model that cannot be loaded or run."""


class Reranker(ABC):
    """Base class of all rerankers.

    Subclasses set ``model_id`` and ``max_length`` (tokens of query + passage + special
    tokens the model reads; longer passages are truncated) and implement ``_logits``.
    """

    model_id: str
    max_length: int
    batch_size: int = 8  # pairs per model call when the caller does not say

    @abstractmethod
    def _logits(self, query: str, passages: list[str], *, batch_size: int) -> np.ndarray:
        """Raw relevance logits for a non-empty list of passages, in the given order: float64 (n,)."""

    def score(self, query: str, passages: Sequence[str], *, batch_size: int | None = None) -> np.ndarray:
        """Relevance probabilities in [0, 1], float64, one per passage in the given order."""
        if not isinstance(query, str):
            raise RerankError(f"query must be a str, got {type(query).__name__}")
        if isinstance(passages, (str, bytes)):
            raise RerankError("passages must be a sequence of strings, not a single string")
        checked = list(passages)
        for position, passage in enumerate(checked):
            if not isinstance(passage, str):
                raise RerankError(f"passages[{position}] is {type(passage).__name__}, expected str")
        batch_size = self.batch_size if batch_size is None else batch_size
        if batch_size < 1:
            raise RerankError(f"batch_size must be at least 1, got {batch_size}")
        if not checked:
            return np.zeros(0, dtype=np.float64)
        return sigmoid(np.asarray(self._logits(query, checked, batch_size=batch_size), dtype=np.float64))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r})"


def sigmoid(logits: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function (no overflow warnings for large |logit|)."""
    logits = np.asarray(logits, dtype=np.float64)
    out = np.empty_like(logits)
    positive = logits >= 0
    out[positive] = 1.0 / (1.0 + np.exp(-logits[positive]))
    exp_logits = np.exp(logits[~positive])
    out[~positive] = exp_logits / (1.0 + exp_logits)
    return out
