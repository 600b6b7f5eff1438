"""Rerankers: cross-encoders scoring (query, passage) pairs with probabilities in [0, 1].

``get_reranker()`` gives the offline default (ms-marco-MiniLM-L-12-v2, INT8 ONNX);
FlagEmbedding and sentence-transformers backends need the optional 'hf' extra.
"""
from __future__ import annotations

from windowrag_pg.rerank.base import Reranker, RerankError

DEFAULT_RERANKER = "ms-marco-minilm-l12"
DEFAULT_RERANKER_MODEL_ID = "onnx:ms-marco-minilm-l12-v2-int8"  # = onnx_cross_encoder.DEFAULT_MODEL_ID
FLAG_PREFIX = "BAAI/bge-reranker"
FLAG_MODEL_ID_PREFIX = "flag:"  # what FlagEmbeddingReranker.model_id starts with
SENTENCE_TRANSFORMERS_PREFIX = "st:"

__all__ = ["DEFAULT_RERANKER", "Reranker", "RerankError", "get_reranker"]


def get_reranker(name: str | None = None, **options) -> Reranker:
    """The reranker called ``name``, built with ``options`` (keyword arguments of its class).

    - ``None`` or ``"ms-marco-minilm-l12"``: ``OnnxCrossEncoder`` (no network, no torch);
    - ``"BAAI/bge-reranker..."``: ``FlagEmbeddingReranker`` (FlagEmbedding);
    - ``"st:NAME_OR_PATH"``: ``SentenceTransformerCrossEncoder`` (sentence-transformers).

    A reranker's ``model_id`` (``"onnx:..."``, ``"flag:NAME"``, ``"st:NAME"``) names it again.
    """
    if name is None or name in (DEFAULT_RERANKER, DEFAULT_RERANKER_MODEL_ID):
        from windowrag_pg.rerank.onnx_cross_encoder import OnnxCrossEncoder

        return OnnxCrossEncoder(**options)
    if isinstance(name, str) and name.startswith((FLAG_PREFIX, FLAG_MODEL_ID_PREFIX)):
        from windowrag_pg.rerank.flag import FlagEmbeddingReranker

        return FlagEmbeddingReranker(name.removeprefix(FLAG_MODEL_ID_PREFIX), **options)
    if isinstance(name, str) and name.startswith(SENTENCE_TRANSFORMERS_PREFIX):
        target = name[len(SENTENCE_TRANSFORMERS_PREFIX) :]
        if not target:
            raise RerankError("'st:' must be followed by a model name or a folder")
        from windowrag_pg.rerank.st_cross_encoder import SentenceTransformerCrossEncoder

        return SentenceTransformerCrossEncoder(target, **options)
    raise RerankError(
        f"unknown reranker {name!r}: use None or {DEFAULT_RERANKER!r} (ONNX, offline), "
        f"'{FLAG_PREFIX}...' (FlagEmbedding) or '{SENTENCE_TRANSFORMERS_PREFIX}NAME_OR_PATH' (sentence-transformers)"
    )
