"""BAAI bge-reranker models through FlagEmbedding (e.g. BAAI/bge-reranker-base, bge-reranker-v2-m3).

Optional backend: needs the 'hf' extra (torch + FlagEmbedding), imported only when this
class is instantiated. A Hub name needs network on first use; a local folder does not.
"""
from __future__ import annotations

import os
from pathlib import PurePath

import numpy as np

from windowrag_pg.embed.base import LoadOnce, import_optional
from windowrag_pg.embed.hub import check_model_source
from windowrag_pg.rerank.base import Reranker, RerankError


class FlagEmbeddingReranker(Reranker):
    """Reranker backed by FlagEmbedding.

    Known model names (FlagEmbedding's own table: bge-reranker-base/-large/-v2-m3, the
    decoder-only v2-gemma, ...) get the class FlagEmbedding picks for them; any other name
    or local folder is loaded as an encoder-only ``FlagReranker`` (a BERT/XLM-R
    sequence-classification model with one logit).
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str],
        *,
        max_length: int = 512,
        use_fp16: bool = False,
        devices: str | list[str] | None = None,
        model_id: str | None = None,
    ) -> None:
        check_model_source(os.fspath(model_name_or_path), error=RerankError, what="FlagEmbedding reranker")
        self._flag = import_optional("FlagEmbedding", needed_for="FlagEmbeddingReranker")
        self.model_name_or_path = os.fspath(model_name_or_path)
        self.model_id = model_id or f"flag:{self.model_name_or_path}"
        self.max_length = max_length
        self.use_fp16 = use_fp16
        self.devices = devices
        self._model = LoadOnce(self._load)

    @property
    def model(self):
        """The loaded FlagEmbedding reranker (loaded on first use)."""
        return self._model.get()

    def _load(self):
        options = dict(use_fp16=self.use_fp16, devices=self.devices, max_length=self.max_length)
        try:
            from FlagEmbedding.inference.reranker.model_mapping import AUTO_RERANKER_MAPPING

            if PurePath(self.model_name_or_path).name in AUTO_RERANKER_MAPPING:
                return self._flag.FlagAutoReranker.from_finetuned(self.model_name_or_path, **options)
            return self._flag.FlagReranker(self.model_name_or_path, **options)
        except Exception as exc:  # OSError offline, ValueError bad folder, ...
            raise RerankError(f"could not load FlagEmbedding reranker {self.model_name_or_path!r}: {exc}") from exc

    def _logits(self, query: str, passages: list[str], *, batch_size: int) -> np.ndarray:
        # normalize=False: raw logits; the base class applies the sigmoid for every backend.
        # FlagEmbedding sorts by length and pads per batch itself, and truncates the passage.
        scores = self.model.compute_score(
            [[query, passage] for passage in passages],
            batch_size=batch_size,
            max_length=self.max_length,
            normalize=False,
        )
        return np.atleast_1d(np.asarray(scores, dtype=np.float64))
