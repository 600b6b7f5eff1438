"""A model name that cannot load fails at once, naming the problem (no database, no network).

Without network the hub client retried for over a minute before failing on a mistyped
`--embedder`, and a local folder that does not exist was first tried as a hub name (~12 s of
importing torch first)."""
from __future__ import annotations

import time

import pytest

from windowrag_pg.embed import EmbeddingError, get_embedder
from windowrag_pg.embed.hub import looks_like_path, model_source_problem
from windowrag_pg.rerank import RerankError, get_reranker


def test_paths_and_hub_ids_are_told_apart():
    assert looks_like_path("/models/bge") and looks_like_path("./bge") and looks_like_path("~/bge")
    assert looks_like_path("models/bge/v1")
    assert not looks_like_path("BAAI/bge-small-en-v1.5") and not looks_like_path("all-MiniLM-L6-v2")


def test_a_folder_that_does_not_exist_is_named(tmp_path):
    missing = str(tmp_path / "no-model")
    assert model_source_problem(missing) == f"no model folder at {missing!r}"
    # a folder without a model's config (found by a tester: transformers listed its ~400 model types)
    assert model_source_problem(str(tmp_path)) == f"{str(tmp_path)!r} is a folder without a model in it " \
        "(no config.json or modules.json)"
    (tmp_path / "config.json").write_text("{}")
    assert model_source_problem(str(tmp_path)) is None  # a model's folder: the backend reads it
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="no model folder at"):
        get_embedder(missing)
    with pytest.raises(RerankError, match="no model folder at"):
        get_reranker(f"st:{missing}")
    assert time.monotonic() - started < 5  # before torch is imported


def test_a_hub_that_cannot_be_reached_is_named_at_once(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    problem = model_source_problem("org/not-a-cached-model-4f1c")
    assert problem is not None and "'org/not-a-cached-model-4f1c' is neither a local folder nor in the Hugging Face cache" in problem
    assert "127.0.0.1 cannot be reached" in problem
    with pytest.raises(RerankError, match="cannot be reached"):
        get_reranker("BAAI/bge-reranker-not-cached-4f1c")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline on purpose: the hub client says so itself, at once
    assert model_source_problem("org/not-a-cached-model-4f1c") is None


def test_a_typo_of_the_built_in_embedder_is_caught():
    with pytest.raises(EmbeddingError, match=r"unknown embedder 'bge-smal-en': did you mean 'bge-small-en'"):
        get_embedder("bge-smal-en")
