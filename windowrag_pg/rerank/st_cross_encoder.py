"""Any sentence-transformers ``CrossEncoder`` (Hugging Face name or local folder) as a reranker.

Optional backend: needs the 'hf' extra (torch + sentence-transformers), imported only when
this class is instantiated. A Hub name needs network on first use; a local folder does not.
"""
from __future__ import annotations

import os

import numpy as np

from windowrag_pg.embed.base import LoadOnce, import_optional
from windowrag_pg.embed.hub import check_model_source
from windowrag_pg.rerank.base import Reranker, RerankError


class SentenceTransformerCrossEncoder(Reranker):
    """Reranker backed by ``sentence_transformers.CrossEncoder`` with a single-logit head."""

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str],
        *,
        max_length: int = 512,
        device: str | None = None,
        model_id: str | None = None,
    ) -> None:
        check_model_source(os.fspath(model_name_or_path), error=RerankError, what="CrossEncoder")
        self._st = import_optional("sentence_transformers", needed_for="SentenceTransformerCrossEncoder")
        self._torch = import_optional("torch", needed_for="SentenceTransformerCrossEncoder")
        self.model_name_or_path = os.fspath(model_name_or_path)
        self.model_id = model_id or f"st:{self.model_name_or_path}"
        self.max_length = max_length
        self.device = device
        self._model = LoadOnce(self._load)

    @property
    def model(self):
        """The loaded CrossEncoder (loaded on first use)."""
        return self._model.get()

    def _load(self):
        try:
            model = self._st.CrossEncoder(self.model_name_or_path, max_length=self.max_length, device=self.device)
        except Exception as exc:  # OSError offline, ValueError bad folder, ...
            raise RerankError(f"could not load CrossEncoder {self.model_name_or_path!r}: {exc}") from exc
        if model.num_labels != 1:
            raise RerankError(
                f"CrossEncoder {self.model_name_or_path!r} has {model.num_labels} labels; "
                "a reranker needs a single relevance logit"
            )
        return model

    def _logits(self, query: str, passages: list[str], *, batch_size: int) -> np.ndarray:
        # Identity activation: the raw logit, whatever activation the model's config names
        # (ms-marco models now save Identity, older ones Sigmoid); the base class applies the sigmoid.
        scores = self.model.predict(
            [(query, passage) for passage in passages],
            batch_size=batch_size,
            show_progress_bar=False,
            activation_fn=self._torch.nn.Identity(),
            convert_to_numpy=True,
        )
        return np.atleast_1d(np.asarray(scores, dtype=np.float64))
