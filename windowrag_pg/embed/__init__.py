"""Embedders: sentences to unit vectors.

``get_embedder()`` gives the offline default (BGE small English v1.5, INT8 ONNX);
any other name is loaded with sentence-transformers (optional 'hf' extra).
"""
from __future__ import annotations

import difflib
import os

from windowrag_pg.embed.base import BGE_QUERY_INSTRUCTION, Embedder, EmbeddingError, MissingExtraError

DEFAULT_EMBEDDER = "bge-small-en"
DEFAULT_EMBEDDER_MODEL_ID = "onnx:bge-small-en-v1.5-int8"  # = onnx_bge.DEFAULT_MODEL_ID, without importing it
SENTENCE_TRANSFORMERS_PREFIX = "st:"

__all__ = [
    "BGE_QUERY_INSTRUCTION",
    "DEFAULT_EMBEDDER",
    "Embedder",
    "EmbeddingError",
    "MissingExtraError",
    "get_embedder",
    "embedder_of_collection",
]


def get_embedder(name: str | None = None, **options) -> Embedder:
    """The embedder called ``name``, built with ``options`` (keyword arguments of its class).

    ``None`` or ``"bge-small-en"``: ``OnnxBgeEmbedder`` (no network, no torch).
    Anything else: ``SentenceTransformerEmbedder`` with that Hugging Face name or local folder.
    A ``model_id`` read back from a collection (``"onnx:bge-small-en-v1.5-int8"``,
    ``"st:NAME"``) names the same embedder again.
    """
    if name is None or name in (DEFAULT_EMBEDDER, DEFAULT_EMBEDDER_MODEL_ID):
        from windowrag_pg.embed.onnx_bge import OnnxBgeEmbedder

        return OnnxBgeEmbedder(**options)
    if not isinstance(name, str) or not name.strip():
        raise EmbeddingError(f"embedder name must be a non-empty string, got {name!r}")
    near = close_to_builtin(name)
    if near:
        raise EmbeddingError(f"unknown embedder {name!r}: did you mean {near!r} (the built-in BGE small, offline)?")
    from windowrag_pg.embed.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(name.removeprefix(SENTENCE_TRANSFORMERS_PREFIX), **options)


def close_to_builtin(name: str) -> str | None:
    """The built-in embedder's name when NAME looks like a typo of it (not a hub id "org/name",
    nor a folder that exists)."""
    if "/" in name or os.path.isdir(os.path.expanduser(name)):
        return None
    return next(iter(difflib.get_close_matches(name.lower(), [DEFAULT_EMBEDDER], n=1, cutoff=0.8)), None)


def embedder_of_collection(collection: str, model_id: str, *, error: type[Exception], owner: str) -> Embedder:
    """The embedder a collection's stored ``model_id`` names (``get_embedder(model_id)``): the
    default and sentence-transformers models load by it; an ONNX folder of one's own
    (``"onnx:<folder name>"``) does not, and ERROR says to pass it to OWNER (a class name)."""
    if model_id.startswith("onnx:") and model_id != DEFAULT_EMBEDDER_MODEL_ID:
        raise error(f"collection {collection!r} was embedded with {model_id!r}, an ONNX model folder that cannot "
                    f"be found by its name: pass that embedder ({owner}(..., embedder=...))")
    return get_embedder(model_id)
