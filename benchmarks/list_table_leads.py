"""What leads cost and give: list items sent without their list's lead-in and table rows without
their header (before migration 0030), against runs that carry them in front (0030), on the same
candidates.

    python benchmarks/list_table_leads.py --collection handbook --budgets 256,512,700,1200,2048

A Markdown list item or table row is a unit of its own, and a run that starts at one was sent
without what it depends on: "Fines for traffic or parking violations." without "The following
expenses are never reimbursed:", "| Taxi | 40 EUR |" without "| Expense | Limit |". Since 0030
windowrag.candidate_sentences gives each list item its list's lead-in sentence and each table row
below the header its table's header row, a run that starts there pays for it and sends it in
front (segment/select.py), and a header row has no value of its own (never sent alone nor at a
run's end). For each budget, both selections over each query's candidates (fetched once):
contexts, contexts that start at a list item whose list has a lead-in that no context sends,
contexts holding a table row whose header no context sends, contexts that are a header row alone or end with one,
lead tokens and tokens sent, and the summed values of the sentences sent (P(evidence): what the
budget buys; the paired difference is what the leads cost). Abstention is off (every query gets
its selection). Queries: JSON lines with "query" (default
benchmarks/queries/handbook_questions.jsonl, 40 questions written for the handbook). The
plain-text evaluation sets hold no list items nor table rows: nothing changes for them.
``--timing FILE`` also times candidate_sentences against 0029's (migrations/versions/
0030_functions.sql, made a temporary function), query by query in alternating order over the
queries and the first ``--timing-limit`` of FILE (e.g. ../shared/eval/squad-dev/queries.jsonl),
and gives the paired median difference with a bootstrap 95% interval. A report, not a timed test.
"""
from __future__ import annotations

import json
import random
import statistics
import time
from dataclasses import replace
from pathlib import Path

from psycopg import sql

from heading_values import argument_parser, open_collection  # benchmarks/heading_values.py

from windowrag_pg.db.sqlfiles import load_frozen_sql
from windowrag_pg.pipeline import PipelineOptions
from windowrag_pg.segment.select import choose_segments, run_leads

SELECTIONS = ("no leads", "leads (0030)")


def measure(candidates, found, *, query_idf: float, background: float | None, budget: int, k: int) -> dict:
    """One selection over CANDIDATES; FOUND are the same candidates with their leads (what the
    units depend on, whether the selection was told or not)."""
    selection = choose_segments(candidates, query_idf=query_idf, background=background, budget=budget,
                                max_segments=k)
    runs = [[found[i] for i in range(run.start, run.end)] for run in selection.runs]
    headers = {(c.document_key, c.lead.ordinal) for c in found if c.lead is not None and c.kind == "table_row"}
    # what the pipeline sends in front of each run (none when the selection was not told of leads)
    fronted = run_leads(candidates, selection.runs)
    sent = {(c.document_key, c.ordinal) for run in runs for c in run}
    sent |= {(run[0].document_key, lead.ordinal) for run, lead in zip(runs, fronted) if lead is not None}
    missing_lead_in = missing_header = bare_header = lead_tokens = unsent = 0
    for run, planned, lead in zip(runs, selection.runs, fronted):
        first = run[0]
        lead_tokens += lead.tokens if lead is not None else 0
        # planned with its lead, which another context sends: not sent twice
        unsent += first.lead.tokens if candidates[planned.start].lead is not None and lead is None else 0
        if first.kind == "list_item" and first.lead is not None \
                and (first.document_key, first.lead.ordinal) not in sent:
            missing_lead_in += 1
        if any(c.kind == "table_row" and c.lead is not None and (c.document_key, c.lead.ordinal) not in sent
               for c in run):
            missing_header += 1
        if (run[-1].document_key, run[-1].ordinal) in headers and run[-1].kind == "table_row":
            bare_header += 1
    valued = [i for run in selection.runs for i in range(run.start, run.end)
              if found[i].kind != "heading" and (found[i].document_key, found[i].ordinal) not in headers]
    return {"contexts": len(selection.runs), "missing_lead_in": missing_lead_in, "missing_header": missing_header,
            "bare_header": bare_header, "lead_tokens": lead_tokens,
            "tokens": sum(run.tokens for run in selection.runs) - unsent,
            "value": float(sum(selection.probabilities[i] for i in valued))}


def sql_timing(conn, embedder, collection: str, queries: list[str]) -> str:
    """candidate_sentences (live) against 0029's, interleaved; the paired median difference."""
    frozen = load_frozen_sql("0030_functions").split("COMMENT ON FUNCTION")[0]
    conn.execute(frozen.replace("windowrag.candidate_sentences(", "pg_temp.candidate_sentences_0029("))
    functions = (("windowrag", "candidate_sentences"), ("pg_temp", "candidate_sentences_0029"))
    times: dict[tuple[str, str], list[float]] = {name: [] for name in functions}
    for i, query in enumerate(queries):
        vector = str(embedder.embed_query(query).tolist())
        for name in functions if i % 2 == 0 else functions[::-1]:
            statement = sql.SQL("SELECT * FROM {}(%s, %s, %s::vector)").format(sql.Identifier(*name))
            started = time.perf_counter()
            conn.execute(statement, [collection, query, vector], prepare=False).fetchall()
            times[name].append((time.perf_counter() - started) * 1000)
    live, before = (times[name][20:] for name in functions)  # the first 20: warm-up
    differences = [a - b for a, b in zip(live, before)]
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(differences, k=len(differences))) for _ in range(2000))
    return (f"candidate_sentences over {len(differences)} queries (after 20 warm-up): "
            f"p50 {statistics.median(live):.2f} ms with leads, {statistics.median(before):.2f} ms as 0029 had it; "
            f"paired median difference "
            f"{statistics.median(differences):+.3f} ms [{medians[50]:+.3f}, {medians[1949]:+.3f}]")


def main() -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--timing", type=Path, default=None, help="also time the SQL with these queries added")
    parser.add_argument("--timing-limit", type=int, default=250)
    args = parser.parse_args()
    conn, pipeline, embedder, queries = open_collection(args)
    search = PipelineOptions().candidate_search()
    budgets = [int(b) for b in args.budgets.split(",")]
    rows: dict[tuple[int, str], list[dict]] = {}
    units = {"list_item": 0, "table_row": 0, "led": 0, "all": 0}
    for query in queries:
        found = pipeline.retriever.candidates_with(query, search)
        if not found.sentences:
            continue
        units["all"] += len(found.sentences)
        for c in found.sentences:
            units[c.kind] = units.get(c.kind, 0) + 1
            units["led"] += c.lead is not None
        unled = [replace(c, lead=None) for c in found.sentences]
        for budget in budgets:
            for name, candidates in zip(SELECTIONS, (unled, found.sentences)):
                rows.setdefault((budget, name), []).append(measure(
                    candidates, found.sentences, query_idf=found.query_idf, background=found.background,
                    budget=budget, k=search.k))
    count = len(rows[(budgets[0], SELECTIONS[0])])
    print(f"## List and table leads: {args.collection}, {count} queries of {args.queries.name}\n")
    print(f"Candidates: {units['all']:,}, of which list items {units['list_item']:,} and table rows "
          f"{units['table_row']:,}; {units['led']:,} with a lead.\n")
    print("| budget | selection | contexts | a list item first, its lead-in not sent | a table row, its header not "
          "sent | ending on a header row | lead tokens | tokens sent | summed values of the sentences sent |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for budget in budgets:
        for name in SELECTIONS:
            r = rows[(budget, name)]
            total = lambda key: sum(x[key] for x in r)  # noqa: E731
            mean = lambda key: statistics.mean(x[key] for x in r)  # noqa: E731
            print(f"| {budget:,} | {name} | {total('contexts')} | {total('missing_lead_in')} | "
                  f"{total('missing_header')} | {total('bare_header')} | {mean('lead_tokens'):.1f} "
                  f"| {mean('tokens'):.0f} | {mean('value'):.3f} |")
        gains = [after["value"] - before["value"] for before, after in zip(*(rows[(budget, n)] for n in SELECTIONS))]
        print(f"| {budget:,} | difference, paired | | | | | | | {statistics.mean(gains):+.3f} "
              f"({sum(g > 1e-9 for g in gains)} more, {sum(g < -1e-9 for g in gains)} less) |")
    if args.timing is not None:
        with args.timing.open(encoding="utf-8") as lines:
            extra = [json.loads(line)["query"] for line in lines if line.strip()]
        random.Random(0).shuffle(extra)
        print("\n" + sql_timing(conn, embedder, args.collection, queries + extra[:args.timing_limit]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
