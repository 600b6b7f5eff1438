"""Any sentence-transformers model (a Hugging Face name or a local folder) as an embedder.

Optional backend: needs the 'hf' extra (torch + sentence-transformers), imported only when
this class is instantiated. A Hub name needs network on first use; a local folder does not.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from windowrag_pg.embed.base import (
    Embedder,
    EmbeddingError,
    LoadOnce,
    ProgressCallback,
    check_texts,
    import_optional,
    l2_normalise,
    resolve_query_instruction,
    unique_texts,
)
from windowrag_pg.embed.hub import check_model_source

# sentence-transformers sorts by length inside one encode() call, so hand it several
# batches at a time; progress is reported per such chunk.
BATCHES_PER_PROGRESS_STEP = 8


class SentenceTransformerEmbedder(Embedder):
    """Embedder backed by ``sentence_transformers.SentenceTransformer``.

    ``query_instruction``: ``None``/``False`` (default) none, ``True`` the BGE instruction
    (for BAAI/bge-*-en-v1.5 models), or any string prepended to queries. ``normalize=False``
    is only for models whose pipeline already ends with a Normalize module: the store
    expects unit vectors. ``model_id`` defaults to ``"st:" + model_name_or_path``.
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str],
        *,
        query_instruction: bool | str | None = None,
        normalize: bool = True,
        device: str | None = None,
        model_id: str | None = None,
    ) -> None:
        check_model_source(os.fspath(model_name_or_path), error=EmbeddingError, what="sentence-transformers model")
        # Imported here, not at module import, so the core library never needs torch.
        self._st = import_optional("sentence_transformers", needed_for="SentenceTransformerEmbedder")
        self.model_name_or_path = os.fspath(model_name_or_path)
        self.model_id = model_id or f"st:{self.model_name_or_path}"
        self.query_instruction = resolve_query_instruction(query_instruction)
        self.normalize = normalize
        self.device = device
        self._model = LoadOnce(self._load)

    @property
    def model(self):
        """The loaded SentenceTransformer (loaded on first use)."""
        return self._model.get()

    def _load(self):
        try:
            return self._st.SentenceTransformer(self.model_name_or_path, device=self.device)
        except Exception as exc:  # OSError offline, ValueError bad folder, ...
            raise EmbeddingError(
                f"could not load sentence-transformers model {self.model_name_or_path!r}: {exc}"
            ) from exc

    @property
    def dimension(self) -> int:
        # get_embedding_dimension is the name from sentence-transformers 5 on.
        getter = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        dimension = getter()
        if dimension is None:
            raise EmbeddingError(f"model {self.model_name_or_path!r} does not report its embedding dimension")
        return int(dimension)

    @property
    def input_token_limit(self) -> int | None:
        return getattr(self.model, "max_seq_length", None)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        checked = check_texts(texts)
        if not checked:
            return []
        # verbose=False: no "longer than the maximum length" warning; we want the true count.
        encoded = self.model.tokenizer(checked, add_special_tokens=False, truncation=False, verbose=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character (start, end) of each token of TEXT, special tokens excluded (for chunking)."""
        if not getattr(self.model.tokenizer, "is_fast", False):
            raise EmbeddingError(f"model {self.model_name_or_path!r} has no fast tokenizer: no token offsets")
        encoded = self.model.tokenizer(
            text, add_special_tokens=False, truncation=False, return_offsets_mapping=True, verbose=False
        )
        return [(int(start), int(end)) for start, end in encoded["offset_mapping"]]

    def _embed(self, texts: list[str], *, batch_size: int, progress: ProgressCallback | None) -> np.ndarray:
        distinct, inverse = unique_texts(texts)
        copies_per_distinct = np.bincount(inverse, minlength=len(distinct))
        step = batch_size * BATCHES_PER_PROGRESS_STEP
        chunks = []
        for start in range(0, len(distinct), step):
            chunk = distinct[start : start + step]
            vectors = self.model.encode(
                chunk,
                batch_size=batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
                normalize_embeddings=False,  # normalised below, in float32, for every backend alike
            )
            vectors = np.asarray(vectors, dtype=np.float32)
            chunks.append(l2_normalise(vectors) if self.normalize else vectors)
            if progress is not None:
                progress(int(copies_per_distinct[start : start + step].sum()))
        return np.concatenate(chunks)[inverse]
