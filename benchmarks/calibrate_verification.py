"""Calibrate the cross-encoder check of abstention (segment/abstain.py) on the relevance rows of
benchmarks/fit_sentence_values.py: in-corpus dev questions against out-of-corpus ones.

    python benchmarks/fit_sentence_values.py --cache benchmarks/out/fit_cache.pkl   # once: the rows
    python benchmarks/calibrate_verification.py --cache benchmarks/out/fit_cache.pkl

For each row: the relevance of the library's model, and the cross-encoder's best probability
over the query's two most valuable sentences, each read with its neighbours among the candidates
as the pipeline reads them (segment/abstain.py's verify_passages; the text from the evaluation
collections, so the same WINDOWRAG_HOME as the fit). Then the rule of segment/abstain.py —
abstain below min_relevance; between it and verify_below, abstain when the cross-encoder's best
probability is below verify_min_score — over a grid, chosen on each half of a two-fold split
(at most 1% of in-corpus questions refused, the most out-of-corpus questions refused at worst,
a little weight on how many in-corpus questions are checked) and reported on the other half.
"""
from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from windowrag_pg.db.connection import connect  # noqa: E402
from windowrag_pg.evaluation.runner import read_queries, sample_queries  # noqa: E402
from windowrag_pg.pipeline import text_slices  # noqa: E402
from windowrag_pg.rerank import get_reranker  # noqa: E402
from windowrag_pg.segment.abstain import sentences_to_verify, verify_passages  # noqa: E402
from windowrag_pg.segment.values import feature_matrix, query_relevance, sentence_probabilities  # noqa: E402

EVAL = REPO.parent / "shared" / "eval"
IN_CORPUS = ("squad-dev", "contractnli-dev")


def query_texts(squad_queries: int, out_of_corpus: int) -> list[str]:
    """The queries of the cached relevance rows, in the order fit_sentence_values.collect made them."""
    squad = sample_queries(read_queries(EVAL / "squad-dev" / "queries.jsonl"), limit=squad_queries, seed=0, skip=1000)
    contracts = read_queries(EVAL / "contractnli-dev" / "queries.jsonl")
    ooc_squad = sample_queries(read_queries(EVAL / "squad-dev" / "queries.jsonl"), limit=out_of_corpus,
                               seed=0, skip=1000 + squad_queries)
    texts = [q["query"] for q in squad] + [q["query"] for q in contracts]
    for q in ooc_squad:  # asked of one contract, of all contracts, of the handbook
        texts += [q["query"]] * 3
    texts += [q["query"] for q in {q["query"]: q for q in contracts}.values()]
    return texts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True, help="fit_sentence_values.py --cache file")
    parser.add_argument("--squad-queries", type=int, default=1500, help="as given to fit_sentence_values.py")
    parser.add_argument("--out-of-corpus", type=int, default=300, help="as given to fit_sentence_values.py")
    args = parser.parse_args()
    with args.cache.open("rb") as handle:
        rows = pickle.load(handle)["relevance"]
    texts = query_texts(args.squad_queries, args.out_of_corpus)
    if len(texts) != len(rows):
        raise SystemExit(f"{args.cache}: {len(rows)} rows, but {len(texts)} queries for these arguments")
    conn = connect(autocommit=True)
    verifier = get_reranker()
    relevance, best = np.zeros(len(rows)), np.zeros(len(rows))
    for i, ((sentences, query_idf, background), _, _) in enumerate(rows):
        if not sentences:
            continue
        probabilities = sentence_probabilities(feature_matrix(sentences))
        relevance[i] = query_relevance(sentences, query_idf=query_idf, background=background,
                                       probabilities=probabilities)
        # the pipeline's own passages and statement for the check's text (Pipeline._verify_steps)
        statement = text_slices(verify_passages(sentences, sentences_to_verify(probabilities)))
        passages = [text for _, text in conn.execute(statement.query, statement.params).fetchall()]
        best[i] = float(verifier.score(texts[i], passages).max())
    groups = np.asarray([g for _, _, g in rows])
    report(relevance, best, groups)
    return 0


def outcome(relevance, best, groups, mask, rule) -> dict[str, float]:
    """Share kept (in corpus) or refused (out of corpus) per group under RULE = (low, high, score):
    segment/abstain.py's abstain_reason, vectorised over the rows for the grid."""
    low, high, score = rule
    send = (relevance >= high) | ((relevance >= low) & (best >= score))
    return {g: float(np.mean(send[mask & (groups == g)] if g in IN_CORPUS else ~send[mask & (groups == g)]))
            for g in sorted(set(groups))}


def report(relevance, best, groups) -> None:
    inside = np.isin(groups, IN_CORPUS)
    fold = np.random.default_rng(0).integers(0, 2, len(groups))
    grid = [(low, high, 1 / (1 + np.exp(-logit))) for low in (0.01, 0.03, 0.05, 0.08) for high in (0.3, 0.4, 0.5, 0.6)
            for logit in np.arange(-6.0, 0.01, 0.5)]
    for half in (0, 1, None):
        train = fold != half if half is not None else np.ones(len(groups), dtype=bool)
        test = fold == half if half is not None else train
        best_rule, best_score = None, -1.0
        for rule in grid:
            shares = outcome(relevance, best, groups, train, rule)
            if min(shares[g] for g in IN_CORPUS) < 0.99:
                continue
            checked = np.mean((relevance[train & inside] >= rule[0]) & (relevance[train & inside] < rule[1]))
            score = min(v for g, v in shares.items() if g not in IN_CORPUS) - 0.1 * checked
            if score > best_score:
                best_rule, best_score = rule, score
        low, high, score = best_rule
        shares = outcome(relevance, best, groups, test, best_rule)
        checked = np.mean((relevance[test & inside] >= low) & (relevance[test & inside] < high))
        label = "all rows" if half is None else f"chosen on half {1 - half}, shown on half {half}"
        print(f"{label}: min_relevance {low}, verify_below {high}, verify_min_score {score:.4f} → "
              + ", ".join(f"{g} {v:.3f}" for g, v in shares.items()) + f"; in-corpus checked {checked:.3f}")


if __name__ == "__main__":
    sys.exit(main())
