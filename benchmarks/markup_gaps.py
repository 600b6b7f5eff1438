"""What the text between sentences costs a token budget, with the selection counting it and blind
to it, on the same queries and candidates (interleaved, query by query).

    python benchmarks/markup_gaps.py --collection eval_handbook_sentence_headers --budgets 700,1200

In Markdown the text between two sentences of a section can be list markers, a table's |---|
row or raw HTML tags; a context is the document's own characters, so it sends them. Blind to
them, the selection plans runs whose sentences fit the budget, and the budget is then held by
cutting the least valuable contexts short (assemble/context.py, fit_token_budget). Counting them
(sql/candidate_sentences.sql returns each sentence's gap; segment/select.py charges a run for the
gaps inside it), the runs it plans are what is sent. For each budget: tokens sent, the share of
them that is text between sentences, sentences sent, their summed values (the sentence values'
P(evidence): the evidence the selection expects to send), and how many queries had a context cut
short. Abstention is off (every query gets its selection). Queries: JSON lines with "query"
(default benchmarks/queries/handbook_questions.jsonl, 40 questions written for the handbook; or
--queries ../shared/eval/contractnli-dev/queries.jsonl). A report, not a timed test.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from contextlib import contextmanager
from pathlib import Path

import windowrag_pg.retrieve.retriever as retriever_module
from windowrag_pg.db.connection import connect
from windowrag_pg.db.embedded import start_embedded
from windowrag_pg.embed import get_embedder
from windowrag_pg.pipeline import Pipeline, PipelineOptions
from windowrag_pg.segment.values import feature_matrix, sentence_probabilities

HERE = Path(__file__).resolve().parent


@contextmanager
def gaps_ignored():
    """The selection as it was: every gap counted as 0 tokens when it plans."""
    counted = retriever_module.candidates_from_rows

    def blind(query, rows, timings, count_tokens=None):
        candidates = counted(query, rows, timings, count_tokens=count_tokens)
        candidates.sentences = [dataclasses.replace(c, gap_tokens=0) for c in candidates.sentences]
        return candidates

    retriever_module.candidates_from_rows = blind
    try:
        yield
    finally:
        retriever_module.candidates_from_rows = counted


def measure(pipeline: Pipeline, query: str, budget: int, values: dict[tuple[int, int], float]) -> dict:
    result = pipeline.search(query, token_budget=budget, min_relevance=None)
    planned = sorted((s["document_id"], s["first_ordinal"], s["last_ordinal"]) for s in result.trace["segments"])
    sent = sorted((c.citation.document_id, c.citation.first_ordinal, c.citation.last_ordinal) for c in result.contexts)
    sentences = [(c.document_key, s.ordinal, s.token_count) for c in result.contexts for s in c.sentences]
    tokens = sum(c.token_count for c in result.contexts)
    return {"tokens": tokens, "between": tokens - sum(t for *_, t in sentences), "sentences": len(sentences),
            "value": sum(values.get((d, o), 0.0) for d, o, _ in sentences), "cut": planned != sent}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", default="eval_handbook_sentence_headers")
    parser.add_argument("--queries", type=Path, default=HERE / "queries" / "handbook_questions.jsonl")
    parser.add_argument("--budgets", default="700,1200")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--url", default=None, help="database URL (default: the embedded server of WINDOWRAG_HOME)")
    args = parser.parse_args()
    conn = connect(args.url or start_embedded(), autocommit=True)
    embedder = get_embedder()
    pipeline = Pipeline(conn, collection=args.collection, embedder=embedder)
    with args.queries.open(encoding="utf-8") as lines:
        queries = list(dict.fromkeys(json.loads(line)["query"] for line in lines if line.strip()))[: args.limit]
    search = PipelineOptions().candidate_search()
    budgets = [int(b) for b in args.budgets.split(",")]
    rows: dict[tuple[int, str], list[dict]] = {}
    for query in queries:
        candidates = pipeline.retriever.candidates_with(query, search)
        p = sentence_probabilities(feature_matrix(candidates.sentences)) if candidates.sentences else []
        values = {(c.document_key, c.ordinal): float(v) for c, v in zip(candidates.sentences, p)}
        for budget in budgets:
            with gaps_ignored():
                rows.setdefault((budget, "blind"), []).append(measure(pipeline, query, budget, values))
            rows.setdefault((budget, "counted"), []).append(measure(pipeline, query, budget, values))
    print(f"## Text between sentences: {args.collection}, {len(queries)} queries of {args.queries.name}\n")
    print("| budget | gaps in the plan | tokens sent (mean) | of them between sentences | sentences sent (mean) "
          "| summed values (mean) | queries cut short |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for budget in budgets:
        for mode in ("blind", "counted"):
            r = rows[(budget, mode)]
            tokens = sum(x["tokens"] for x in r)
            print(f"| {budget:,} | {mode} | {statistics.mean(x['tokens'] for x in r):.0f} "
                  f"| {sum(x['between'] for x in r) / max(tokens, 1):.1%} "
                  f"| {statistics.mean(x['sentences'] for x in r):.1f} | {statistics.mean(x['value'] for x in r):.3f} "
                  f"| {sum(x['cut'] for x in r)} of {len(r)} |")
        blind, counted = rows[(budget, "blind")], rows[(budget, "counted")]
        gains = [c["value"] - b["value"] for b, c in zip(blind, counted)]
        print(f"| {budget:,} | counted − blind, paired | | | "
              f"{statistics.mean(c['sentences'] - b['sentences'] for b, c in zip(blind, counted)):+.1f} "
              f"| {statistics.mean(gains):+.3f} ({sum(g > 1e-9 for g in gains)} more, {sum(g < -1e-9 for g in gains)} less) | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
