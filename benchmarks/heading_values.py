"""What headings cost a token budget when the selection values them as sentences (before
migration 0029) and when they have no value of their own (0029), on the same candidates.

    python benchmarks/heading_values.py --collection handbook --budgets 256,512,700,1200,2048

A Markdown, HTML, DOCX or PDF heading is a unit of its own, and it matches a query about its
section well (its few words are the section's subject). Valued as a sentence, the selection sent
bare headings as contexts of their own at small budgets, each one of the k contexts, telling the
reader nothing that the citation's section path does not. For each budget, both selections over
each query's candidates (windowrag.candidate_sentences, fetched once): contexts, contexts that
are a heading alone, heading tokens and tokens sent, sentences other than headings sent and their
summed values (P(evidence): the evidence the selection expects to send), and the paired
difference of those values. Abstention is off (every query gets its selection). Queries: JSON
lines with "query" (default benchmarks/queries/handbook_questions.jsonl, 40 questions written for
the handbook). Plain-text collections (the squad-dev and ContractNLI evaluation sets) hold no
headings: nothing changes for them. A report, not a timed test.
"""
from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace
from pathlib import Path

from windowrag_pg.db.connection import connect
from windowrag_pg.db.embedded import start_embedded
from windowrag_pg.embed import get_embedder
from windowrag_pg.pipeline import Pipeline, PipelineOptions
from windowrag_pg.segment.select import choose_segments

HERE = Path(__file__).resolve().parent
SELECTIONS = ("headings valued", "no value (0029)")


def measure(candidates, heading: list[bool], *, query_idf: float, background: float | None, budget: int,
            k: int) -> dict:
    """One selection over CANDIDATES; HEADING says which are headings (whatever kind they are given)."""
    selection = choose_segments(candidates, query_idf=query_idf, background=background, budget=budget,
                                max_segments=k)
    sent = [i for run in selection.runs for i in range(run.start, run.end)]
    return {"contexts": len(selection.runs),
            "bare": sum(all(heading[i] for i in range(run.start, run.end)) for run in selection.runs),
            "heading_tokens": sum(candidates[i].token_count for i in sent if heading[i]),
            "tokens": sum(run.tokens for run in selection.runs),
            "sentences": sum(not heading[i] for i in sent),
            "value": float(sum(selection.probabilities[i] for i in sent if not heading[i]))}


def argument_parser(doc: str) -> argparse.ArgumentParser:
    """--collection, --queries (JSON lines with "query"), --budgets and --url: the options of the
    scripts that compare two selections over the same candidates (this one, list_table_leads.py)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--collection", default="handbook")
    parser.add_argument("--queries", type=Path, default=HERE / "queries" / "handbook_questions.jsonl")
    parser.add_argument("--budgets", default="256,512,700,1200,2048")
    parser.add_argument("--url", default=None, help="database URL (default: the embedded server of WINDOWRAG_HOME)")
    return parser


def open_collection(args: argparse.Namespace):
    """(connection, a pipeline over args.collection, its embedder, the distinct queries)."""
    conn = connect(args.url or start_embedded(), autocommit=True)
    embedder = get_embedder()
    pipeline = Pipeline(conn, collection=args.collection, embedder=embedder)
    with args.queries.open(encoding="utf-8") as lines:
        queries = list(dict.fromkeys(json.loads(line)["query"] for line in lines if line.strip()))
    return conn, pipeline, embedder, queries


def main() -> int:
    args = argument_parser(__doc__).parse_args()
    conn, pipeline, _, queries = open_collection(args)
    search = PipelineOptions().candidate_search()
    budgets = [int(b) for b in args.budgets.split(",")]
    rows: dict[tuple[int, str], list[dict]] = {}
    for query in queries:
        found = pipeline.retriever.candidates_with(query, search)
        if not found.sentences:
            continue
        as_sentences = [replace(c, kind="sentence") if c.kind == "heading" else c for c in found.sentences]
        heading = [c.kind == "heading" for c in found.sentences]
        for budget in budgets:
            for name, candidates in zip(SELECTIONS, (as_sentences, found.sentences)):
                rows.setdefault((budget, name), []).append(measure(
                    candidates, heading, query_idf=found.query_idf, background=found.background, budget=budget, k=search.k))
    print(f"## Headings: {args.collection}, {len(rows[(budgets[0], SELECTIONS[0])])} queries of {args.queries.name}\n")
    print("| budget | headings | contexts | a heading alone (queries with one) | heading tokens sent | tokens sent "
          "| other sentences sent | their summed values |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for budget in budgets:
        for name in SELECTIONS:
            r = rows[(budget, name)]
            mean = lambda key: statistics.mean(x[key] for x in r)  # noqa: E731
            print(f"| {budget:,} | {name} | {mean('contexts'):.2f} | {mean('bare'):.2f} ({sum(x['bare'] > 0 for x in r)}) "
                  f"| {mean('heading_tokens'):.1f} | {mean('tokens'):.0f} | {mean('sentences'):.1f} | {mean('value'):.3f} |")
        gains = [after["value"] - before["value"] for before, after in zip(*(rows[(budget, n)] for n in SELECTIONS))]
        print(f"| {budget:,} | difference, paired | | | | | | {statistics.mean(gains):+.3f} "
              f"({sum(g > 1e-9 for g in gains)} more, {sum(g < -1e-9 for g in gains)} less) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
