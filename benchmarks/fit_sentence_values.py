"""Fit the two small logistic models of segment/values.py on the dev sets, and say how well they do.

    python benchmarks/fit_sentence_values.py [--squad-queries 1500] [--out benchmarks/out/fit.json]

1. Sentence values: P(sentence holds evidence) from FEATURES, on every candidate sentence
   (windowrag.candidate_sentences, the library's own path) of SQuAD dev questions 1,000–2,499 of
   the seed-0 shuffle (the first 1,000 are the reported sample, left out) and all ContractNLI dev
   hypotheses (each in its own contract); the two sets weigh the same. Labels: SQuAD, the sentence
   holds a gold answer span; ContractNLI, at least half the sentence lies in an evidence span.
2. Relevance (abstention): P(the corpus answers) from RELEVANCE_FEATURES, in-corpus questions
   (label 1) against out-of-corpus ones (label 0): SQuAD questions asked of the contracts (each
   scoped to a contract drawn by seed, and unscoped), SQuAD questions asked of the handbook and
   contract hypotheses asked of SQuAD. Each
   query's background similarity (embed/background.py) is kept with its candidates.

The relevance reads each query's best sentence value, so it is fitted after the sentence model
(with --relevance-only, on the library's own sentence weights).

Prints the weights to paste into windowrag_pg/segment/values.py (WEIGHTS, RELEVANCE_WEIGHTS) and
a JSON report (and TYPICAL_BACKGROUND, the mean background of the dev questions). Deterministic: fixed seeds, exact Newton steps, L2 = 1.
"""
from __future__ import annotations

import argparse
import json
import pickle
import random
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from windowrag_pg.db.connection import connect  # noqa: E402
from windowrag_pg.embed import get_embedder  # noqa: E402
from windowrag_pg.evaluation.presets import PRESETS  # noqa: E402
from windowrag_pg.evaluation.runner import ensure_ingested, read_queries, sample_queries  # noqa: E402
from windowrag_pg.pipeline import PipelineOptions  # noqa: E402
from windowrag_pg.retrieve.retriever import Retriever  # noqa: E402
from windowrag_pg.segment.values import (  # noqa: E402
    FEATURES, RELEVANCE_FEATURES, WEIGHTS, feature_matrix, relevance_features, sentence_probabilities,
)

EVAL = REPO.parent / "shared" / "eval"


def logistic_fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray, *, l2: float = 1.0) -> np.ndarray:
    """Weighted L2-regularised logistic regression by Newton's method."""
    w = np.zeros(x.shape[1])
    weight = weight / weight.mean()
    for _ in range(30):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
        gradient = x.T @ (weight * (p - y)) + l2 * w
        hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + l2 * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w


def sentence_labels(candidates, documents, gold, *, contract: bool) -> np.ndarray:
    y = np.zeros(len(candidates))
    for i, c in enumerate(candidates):
        external_id = documents[c.document_key][0]
        for g in gold:
            if str(g["doc_id"]) != external_id:
                continue
            if contract:
                overlap = min(c.end_char, g["end"]) - max(c.start_char, g["start"])
                if overlap * 2 >= c.end_char - c.start_char:
                    y[i] = 1.0
            elif c.start_char <= g["start"] and g["end"] <= c.end_char:
                y[i] = 1.0
    return y


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--squad-queries", type=int, default=1500)
    parser.add_argument("--out-of-corpus", type=int, default=300)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out" / "fit_sentence_values.json")
    parser.add_argument("--cache", type=Path, default=None,
                        help="keep the candidate sentences of every query in this pickle and reuse them "
                             "(to refit after changing features without querying again)")
    parser.add_argument("--relevance-only", action="store_true",
                        help="keep the sentence weights of segment/values.py and fit the relevance alone")
    args = parser.parse_args()
    if args.cache is not None and args.cache.exists():
        with args.cache.open("rb") as handle:
            collected = pickle.load(handle)
    else:
        collected = collect(args)
        if args.cache is not None:
            args.cache.parent.mkdir(parents=True, exist_ok=True)
            with args.cache.open("wb") as handle:
                pickle.dump(collected, handle)
    return fit(collected, args)


def collect(args) -> dict:
    """Every query's candidates: {"in_corpus": [(dataset, candidates, labels)], "relevance": [(features
    input, label, group)]} — stored as plain values so a cache can be refitted with new features."""

    options = PipelineOptions().candidate_search()
    embedder = get_embedder()
    conn = connect(autocommit=True)
    collections = {}
    for dataset in ("squad-dev", "contractnli-dev", "handbook"):
        ingest = ensure_ingested(conn, documents_path=EVAL / dataset / "documents.jsonl", config=PRESETS["full"],
                                 dataset=dataset, embedder=embedder, progress=False)
        collections[dataset] = ingest["collection"]
    retriever = Retriever(conn, embedder=embedder)
    squad = sample_queries(read_queries(EVAL / "squad-dev" / "queries.jsonl"), limit=args.squad_queries, seed=0, skip=1000)
    contracts = read_queries(EVAL / "contractnli-dev" / "queries.jsonl")
    contract_ids = sorted({str(q["scope_doc_id"]) for q in contracts})

    def candidates(query: str, dataset: str, scope: str | None):
        filters = {"document_id": scope} if scope is not None else None
        return retriever.candidates_with(query, options, filters=filters, collection=collections[dataset])

    in_corpus, relevance_rows = [], []
    for dataset, queries, contract in (("squad-dev", squad, False), ("contractnli-dev", contracts, True)):
        for q in queries:
            found = candidates(q["query"], dataset, q.get("scope_doc_id"))
            labels = sentence_labels(found.sentences, found.documents, q["gold"], contract=contract)
            in_corpus.append((dataset, found.sentences, labels))
            relevance_rows.append(((found.sentences, found.query_idf, found.background), 1.0, dataset))
    rng = random.Random(0)
    ooc_squad = sample_queries(read_queries(EVAL / "squad-dev" / "queries.jsonl"), limit=args.out_of_corpus,
                               seed=0, skip=1000 + args.squad_queries)
    distinct_hypotheses = list({q["query"]: q for q in contracts}.values())
    for q in ooc_squad:
        found = candidates(q["query"], "contractnli-dev", rng.choice(contract_ids))
        relevance_rows.append(((found.sentences, found.query_idf, found.background), 0.0, "squad→contract"))
        found = candidates(q["query"], "contractnli-dev", None)
        relevance_rows.append(((found.sentences, found.query_idf, found.background), 0.0, "squad→contracts"))
        found = candidates(q["query"], "handbook", None)
        relevance_rows.append(((found.sentences, found.query_idf, found.background), 0.0, "squad→handbook"))
    for q in distinct_hypotheses:
        found = candidates(q["query"], "squad-dev", None)
        relevance_rows.append(((found.sentences, found.query_idf, found.background), 0.0, "contract→squad"))
    return {"in_corpus": in_corpus, "relevance": relevance_rows}


def fit(collected: dict, args) -> int:
    blocks = []
    for dataset in ("squad-dev", "contractnli-dev"):
        rows = [(feature_matrix(sentences), labels) for name, sentences, labels in collected["in_corpus"]
                if name == dataset]
        x, y = np.vstack([r[0] for r in rows]), np.concatenate([r[1] for r in rows])
        blocks.append((x, y, np.full(len(y), 1.0 / len(y))))
        print(f"{dataset}: {len(rows)} queries, {len(y)} candidate sentences, {int(y.sum())} positive",
              file=sys.stderr)
    if args.relevance_only:  # the sentence model as the library has it
        weights = WEIGHTS
    else:
        x = np.vstack([b[0] for b in blocks])
        y = np.concatenate([b[1] for b in blocks])
        weight = np.concatenate([b[2] for b in blocks])
        weights = logistic_fit(x, y, weight)
    # the relevance reads the best sentence value: computed with the sentence weights just fitted
    relevance_rows = [(relevance_features(sentences, query_idf=query_idf, background=background,
                                          probabilities=sentence_probabilities(feature_matrix(sentences), weights)),
                       label, group)
                      for (sentences, query_idf, background), label, group in collected["relevance"]]
    # each group (in-corpus set, out-of-corpus kind) weighs the same
    groups = [r[2] for r in relevance_rows]
    sizes = {g: groups.count(g) for g in set(groups)}
    rx = np.vstack([r[0] for r in relevance_rows])
    ry = np.asarray([r[1] for r in relevance_rows])
    rw = np.asarray([1.0 / sizes[g] for g in groups])
    relevance_weights = logistic_fit(rx, ry, rw)
    scores = 1.0 / (1.0 + np.exp(-(rx @ relevance_weights)))
    thresholds = {}
    for t in np.round(np.arange(0.05, 0.96, 0.05), 2):
        thresholds[float(t)] = {g: round(float(np.mean((scores[np.asarray(groups) == g] >= t)
                                                       if g in ("squad-dev", "contractnli-dev")
                                                       else (scores[np.asarray(groups) == g] < t))), 4)
                                for g in sorted(sizes)}
    report = {
        "features": dict(zip(FEATURES, np.round(weights, 4).tolist())),
        "relevance_features": dict(zip(RELEVANCE_FEATURES, np.round(relevance_weights, 4).tolist())),
        "relevance_by_threshold": thresholds,
        "note": "in-corpus groups: share kept (not abstained); out-of-corpus groups: share abstained",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print("WEIGHTS = np.array([" + ", ".join(f"{w:.4f}" for w in weights) + "])")
    print("RELEVANCE_WEIGHTS = np.array([" + ", ".join(f"{w:.4f}" for w in relevance_weights) + "])")
    backgrounds = [b for (_, _, b), _, _ in collected["relevance"] if b is not None]
    print(f"TYPICAL_BACKGROUND = {np.mean(backgrounds):.2f}")
    print(json.dumps(thresholds, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
