"""The whole chain on real data: retrieval → rerank → RSE → assembly, and the trace."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from windowrag_pg.ingest import Ingestor
from windowrag_pg.pipeline import Pipeline, PipelineOptions
from windowrag_pg.sources import SourceDocument

from .conftest import read_jsonl


@pytest.fixture(scope="module")
def squad_article(db_url, embedder, eval_dir):
    """One SQuAD article (a few hundred sentences) and its questions."""
    from windowrag_pg.db.connection import connect

    documents = read_jsonl(eval_dir / "squad-dev" / "documents.jsonl")
    queries = read_jsonl(eval_dir / "squad-dev" / "queries.jsonl")
    article = documents[0]
    questions = [q for q in queries if q["gold"] and q["gold"][0]["doc_id"] == article["id"]]
    name = "squad_one_article"
    with connect(db_url, autocommit=True) as conn:
        report = Ingestor(conn, collection=name, embedder=embedder).ingest(
            [SourceDocument(external_id=article["id"], format=article["format"], text=article["text"],
                            title=article["title"])])
        assert not report.errors
    return name, article, questions


def gold_rank(contexts, gold) -> int | None:
    for rank, c in enumerate(contexts, start=1):
        if any(c.citation.document_id == g["doc_id"] and c.citation.start_char <= g["start"]
               and g["end"] <= c.citation.end_char for g in gold):
            return rank
    return None


def test_rerank_and_rse_lift_gold_that_hybrid_ranks_lower(conn, embedder, squad_article):
    name, article, questions = squad_article
    pipeline = Pipeline(conn, collection=name, embedder=embedder)
    lifted = []
    hybrid_top1 = rerank_top1 = 0
    for question in questions[:20]:
        hybrid = pipeline.search(question["query"], k=5, window=1, rerank=False)
        full = pipeline.search(question["query"], k=5, window=1, rerank=True, rerank_candidates=10, rse="balanced")
        before, after = gold_rank(hybrid.contexts, question["gold"]), gold_rank(full.contexts, question["gold"])
        hybrid_top1 += before == 1
        rerank_top1 += after == 1
        if after == 1 and (before is None or before > 1):
            lifted.append(question["query"])
        for c in full.contexts:  # every context is an exact slice with whole sentences
            assert c.text == article["text"][c.citation.start_char:c.citation.end_char]
    assert lifted, "no question where rerank + RSE put the gold span first and hybrid did not"
    assert rerank_top1 >= hybrid_top1


def test_rse_minimum_value_can_abstain(conn, embedder, squad_article):
    name, _, _ = squad_article
    pipeline = Pipeline(conn, collection=name, embedder=embedder)
    result = pipeline.search("What is the airspeed velocity of an unladen swallow carrying a coconut?",
                             k=5, window=1, rerank=True, rerank_candidates=5, rse="precision")
    assert result.contexts == []
    assert result.trace["rse"]["segments"] == []


def test_token_budget_is_respected_with_whole_sentences(conn, embedder, squad_article):
    name, article, questions = squad_article
    pipeline = Pipeline(conn, collection=name, embedder=embedder)
    result = pipeline.search(questions[0]["query"], k=5, window=3, rerank=False, token_budget=150)
    assert result.contexts
    assert sum(c.token_count for c in result.contexts) <= 150
    for c in result.contexts:
        assert c.token_count == sum(s.token_count for s in c.sentences)
        assert c.citation.start_char == c.sentences[0].start_char and c.citation.end_char == c.sentences[-1].end_char


def test_trace_records_every_stage(conn, embedder, squad_article):
    name, _, questions = squad_article
    result = Pipeline(conn, collection=name, embedder=embedder).search(
        questions[1]["query"], k=3, window=2, rerank=True, rerank_candidates=5, rse="balanced")
    trace = result.trace
    assert {"options", "retrieval", "rerank", "rse", "contexts", "timings_ms"} <= set(trace)
    assert len(trace["rerank"]) == len(trace["retrieval"]) <= 5
    assert all(0.0 <= r["score"] <= 1.0 for r in trace["rerank"])
    assert {"embed", "sql", "fetch", "rerank", "rse", "assemble", "total"} <= set(trace["timings_ms"])
    assert all(h["dense_rank"] or h["bm25_rank"] for w in trace["retrieval"] for h in w["hits"])


def test_cli_json_has_trace_and_explain_renders(db_url, squad_article):
    name, _, questions = squad_article
    base = [sys.executable, "-m", "windowrag_pg.cli", "--database-url", db_url, "query", questions[2]["query"],
            "--collection", name, "--k", "3", "--rerank-candidates", "5"]
    data = json.loads(subprocess.run(base + ["--json"], capture_output=True, text=True, check=True, timeout=300).stdout)
    assert "trace" in data and data["contexts"]
    assert {"document_id", "title", "section_path", "start_char", "end_char", "text", "score", "hits"} <= set(data["contexts"][0])
    shown = subprocess.run(base + ["--explain", "--rerank", "--rse", "balanced"], capture_output=True, text=True, check=True,
                           timeout=300, env={**__import__("os").environ, "COLUMNS": "160"}).stdout
    assert "1. Retrieval" in shown and "2. Rerank" in shown and "3. RSE" in shown and "timings:" in shown


def test_rse_that_returns_nothing_says_why(conn, embedder, squad_article):
    name, _, _ = squad_article
    result = Pipeline(conn, collection=name, embedder=embedder).search(
        "What is the airspeed velocity of an unladen swallow carrying a coconut?",
        k=5, window=1, rerank=True, rerank_candidates=5, rse="precision")
    assert result.abstained and result.contexts == []
    assert "minimum_segment_value" in result.trace["abstain"]


@pytest.mark.parametrize("selection", ["segments", "value_windows"])
def test_budget_first_segments_are_cited_disjoint_and_within_the_budget(conn, embedder, squad_article, selection):
    name, article, questions = squad_article
    pipeline = Pipeline(conn, collection=name, embedder=embedder)
    for question in questions[:5]:
        result = pipeline.search(question["query"], token_budget=300, k=4, selection=selection)
        assert not result.abstained and 1 <= len(result.contexts) <= 4
        tokens = embedder.count_tokens([c.text for c in result.contexts])
        assert sum(tokens) <= 300 and sum(c.token_count for c in result.contexts) <= 300
        spans = sorted((c.citation.start_char, c.citation.end_char) for c in result.contexts)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # never overlapping
        for c in result.contexts:
            assert article["text"][c.citation.start_char:c.citation.end_char] == c.text
            assert len({s.section_id for s in c.sentences}) == 1
            assert [s.ordinal for s in c.sentences] == list(range(c.citation.first_ordinal, c.citation.last_ordinal + 1))
        assert [c.score for c in result.contexts] == sorted((c.score for c in result.contexts), reverse=True)
        assert result.trace["segments"] and result.trace["abstain"] is None


def test_min_relevance_abstains_and_says_why(conn, embedder, squad_article):
    name, _, questions = squad_article
    pipeline = Pipeline(conn, collection=name, embedder=embedder)
    kept = pipeline.search(questions[0]["query"], min_relevance=None)
    assert not kept.abstained and kept.contexts and kept.trace["verification"] is None
    refused = pipeline.search(questions[0]["query"], min_relevance=1.0)
    assert refused.abstained and refused.contexts == []
    assert "min_relevance" in refused.trace["abstain"] and refused.as_dict()["abstained"] is True


def test_the_cross_encoder_checks_the_uncertain_band(conn, embedder, squad_article):
    """A band over every relevance makes each query checked: the real cross-encoder reads the two
    most valuable sentences, and its scores decide."""
    name, article, questions = squad_article
    pipeline = Pipeline(conn, collection=name, embedder=embedder)
    question = questions[0]["query"]
    checked = pipeline.search(question, min_relevance=0.0, verify_below=1.0)
    verification = checked.trace["verification"]
    assert len(verification["sentences"]) == 2 and len(verification["scores"]) == 2
    assert all(s["document_id"] == article["id"] for s in verification["sentences"])
    assert max(verification["scores"]) >= PipelineOptions().verify_min_score  # the answer is there
    assert not checked.abstained and checked.contexts and checked.trace["timings_ms"]["verify"] > 0
    # the same sentences, a bar none can reach: refused, and the reason names the check
    refused = pipeline.search(question, min_relevance=0.0, verify_below=1.0, verify_min_score=1.0)
    assert refused.abstained and refused.contexts == [] and "cross-encoder" in refused.trace["abstain"]
    assert refused.trace["verification"]["scores"] == verification["scores"]
    # an off-topic question: its best sentences do not answer it
    off_topic = pipeline.search("What is the boiling point of liquid nitrogen in kelvin?",
                                min_relevance=0.0, verify_below=1.0)
    assert max(off_topic.trace["verification"]["scores"]) < PipelineOptions().verify_min_score
    assert off_topic.abstained
    # the relevance model alone: no check
    alone = pipeline.search(question, verify_below=None)
    assert alone.trace["verification"] is None and "verify" not in alone.trace["timings_ms"]


def test_cli_token_budget_and_abstention(db_url, embedder, squad_article):
    name, _, questions = squad_article
    base = [sys.executable, "-m", "windowrag_pg.cli", "--database-url", db_url, "query", questions[3]["query"],
            "--collection", name]
    data = json.loads(subprocess.run(base + ["--token-budget", "700", "--json"], capture_output=True, text=True,
                                     check=True, timeout=300).stdout)
    assert data["abstained"] is False and data["contexts"]
    assert sum(embedder.count_tokens([c["text"] for c in data["contexts"]])) <= 700
    shown = subprocess.run(base + ["--min-relevance", "1"], capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0 and "no relevant context" in shown.stdout
    data = json.loads(subprocess.run(base + ["--min-relevance", "1", "--json"], capture_output=True, text=True,
                                     check=True, timeout=300).stdout)
    assert data["abstained"] is True and data["contexts"] == [] and data["trace"]["abstain"]
    kept = json.loads(subprocess.run(base + ["--min-relevance", "none", "--verify-below", "none", "--json"],
                                     capture_output=True, text=True, check=True, timeout=300).stdout)
    assert kept["abstained"] is False and kept["trace"]["verification"] is None
    explained = subprocess.run(base + ["--min-relevance", "0", "--verify-below", "1", "--explain"],
                               capture_output=True, text=True, check=True, timeout=300).stdout
    assert "the cross-encoder scored the best sentences" in explained
    wrong = subprocess.run(base + ["--verify-below", "high"], capture_output=True, text=True, timeout=300)
    assert wrong.returncode == 2 and "--verify-below" in wrong.stderr
