"""The embedder interface shared by every backend.

An embedder turns sentences into unit-length float32 vectors. The store compares vectors by
inner product, so the rows must be L2-normalised; the ``model_id`` is saved with each
collection so that queries are never embedded by a different model than the documents.
"""
from __future__ import annotations

import importlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

import numpy as np

# BGE v1.5 was trained with this instruction on the query side only (documents go in bare).
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "

ProgressCallback = Callable[[int], None]


class EmbeddingError(ValueError):
    """Bad input to an embedder, or a model that cannot be loaded or run."""


class Embedder(ABC):
    """Base class of all embedders.

    Subclasses set ``model_id`` (a stable identifier stored per collection) and implement
    ``dimension``, ``_embed`` and ``count_tokens``; input checks, the query instruction
    and progress reporting live here so every backend behaves the same.
    """

    model_id: str
    query_instruction: str | None = None

    @property
    @abstractmethod
    def dimension(self) -> int:
        """Length of each vector."""

    @abstractmethod
    def _embed(self, texts: list[str], *, batch_size: int, progress: ProgressCallback | None) -> np.ndarray:
        """Embed a non-empty list of strings: float32 (n, dimension), unit rows."""

    @abstractmethod
    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text, special tokens excluded and without truncation (for token budgets)."""

    def embed_documents(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 32,
        progress: ProgressCallback | None = None,
    ) -> np.ndarray:
        """Embed passages as they are (no instruction).

        ``progress``, when given, is called after each batch with the number of input texts
        finished in it; the calls add up to ``len(texts)`` (fits ``tqdm.update``).
        """
        checked = check_texts(texts)
        if batch_size < 1:
            raise EmbeddingError(f"batch_size must be at least 1, got {batch_size}")
        if not checked:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._embed(checked, batch_size=batch_size, progress=progress)

    @property
    def input_token_limit(self) -> int | None:
        """Tokens the model reads of a text, special tokens included (it truncates the rest); None
        when not known."""
        return None

    def query_truncation_note(self, text: str) -> str | None:
        """A note when the model reads only the start of query TEXT (a pasted paragraph), else None."""
        limit = self.input_token_limit
        prefixed = f"{self.query_instruction}{text}" if self.query_instruction else text
        if limit is None or len(prefixed) + 2 <= limit:  # a token is at least a character: it fits
            return None
        tokens = self.count_tokens([prefixed])[0] + 2  # [CLS] and [SEP]
        if tokens <= limit:
            return None
        return (f"the query is {tokens} tokens and the embedder reads its first {limit}: the dense search "
                "ignores the rest (put the question first)")

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query, with the query instruction when the embedder has one: (dimension,)."""
        if not isinstance(text, str):
            raise EmbeddingError(f"query must be a str, got {type(text).__name__}")
        prefixed = f"{self.query_instruction}{text}" if self.query_instruction else text
        return self._embed([prefixed], batch_size=1, progress=None)[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r})"


def check_texts(texts: Sequence[str]) -> list[str]:
    """Return ``texts`` as a list, refusing a bare string (it would be embedded char by char) and non-strings."""
    if isinstance(texts, (str, bytes)):
        raise EmbeddingError("texts must be a sequence of strings, not a single string")
    checked = list(texts)
    for position, text in enumerate(checked):
        if not isinstance(text, str):
            raise EmbeddingError(f"texts[{position}] is {type(text).__name__}, expected str")
    return checked


def resolve_query_instruction(query_instruction: bool | str | None) -> str | None:
    """``True`` → the BGE instruction; a string → that string; ``False``/``None``/"" → none."""
    if query_instruction is True:
        return BGE_QUERY_INSTRUCTION
    if query_instruction is False or query_instruction is None or query_instruction == "":
        return None
    if isinstance(query_instruction, str):
        return query_instruction
    raise EmbeddingError(f"query_instruction must be a bool or a str, got {type(query_instruction).__name__}")


def unique_texts(texts: list[str]) -> tuple[list[str], np.ndarray]:
    """Distinct texts in first-seen order, and for each input the index of its distinct text.

    Boilerplate sentences (headers, disclaimers) repeat across real corpora; embedding each
    once and scattering back with ``vectors[inverse]`` saves model calls.
    """
    index_of: dict[str, int] = {}
    inverse = np.empty(len(texts), dtype=np.int64)
    for position, text in enumerate(texts):
        inverse[position] = index_of.setdefault(text, len(index_of))
    return list(index_of), inverse


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (an all-zero row stays zero instead of becoming NaN)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


HF_EXTRA_HINT = (
    "install the optional 'hf' extra: pip install 'windowrag-pg[hf]' "
    "(on a CPU-only machine pin a CPU torch in the same command, e.g. torch==2.13.0, "
    "or pip pulls several GB of CUDA packages)"
)


class MissingExtraError(ImportError):
    """An optional backend was asked for but its packages are not installed."""


def import_optional(module_name: str, *, needed_for: str):
    """Import an optional dependency, or say which extra provides it."""
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise MissingExtraError(f"{needed_for} needs the package {module_name!r}: {HF_EXTRA_HINT}") from exc


class LoadOnce:
    """A model loaded on first use, once, even when several threads ask at the same time."""

    def __init__(self, load: Callable[[], object]) -> None:
        self._load = load
        self._value = None
        self._lock = threading.Lock()

    def get(self):
        if self._value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._load()
        return self._value
