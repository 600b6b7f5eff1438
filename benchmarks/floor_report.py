r"""Spending less than the budget: `sentence_floor` on the dev sets, recall against the tokens sent.

    python benchmarks/floor_report.py --run       # run the missing curves, then print the report
    python benchmarks/floor_report.py             # print the report from benchmarks/out/

With the default floor of 0 the selection fills the token budget; a floor F prices each sentence
at F × the query's best value per 32 tokens (segment/select.py), so weak sentences are left out
and a query sends less when its evidence is short. --run runs, for each floor and set,

    windowrag eval --documents ../shared/eval/<set>/documents.jsonl --queries ../shared/eval/<set>/queries.jsonl \
        --config <full with sentence_floor F> --budgets 256,512,700,1024,1200,1536,2048 --limit <n> --seed 0 --json --rows

into benchmarks/out/floor_<set>_<F>.json (squad-dev: the 1,000-question sample of
benchmarks/budget_report.py; contractnli-dev: all 614 hypotheses). The report gives, per set and
budget, each floor's recall and mean tokens sent, its paired difference from floor 0 at the same
budget, and its difference from floor 0 *at the same mean tokens*: floor 0's recall interpolated
linearly between the budgets whose mean tokens bracket the floor's (the cost a user pays is what
is sent, not the cap). A report, not a timed test.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from eval_report import EVAL_DIR, OUT, paired_bootstrap

DATASETS = {"squad-dev": ("hit@5", 1000), "contractnli-dev": ("evidence_recall@5", None)}
BUDGETS = (256, 512, 700, 1024, 1200, 1536, 2048)
FLOORS = (0.0, 0.01, 0.02)


def floor_path(dataset: str, floor: float) -> Path:
    return OUT / f"floor_{dataset}_{floor:g}.json"


def run(dataset: str, floor: float, *, home: str | None, seed: int) -> None:
    metric, limit = DATASETS[dataset]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as config:
        json.dump({"base": "full", "name": f"full_floor_{floor:g}", "sentence_floor": floor}, config)
    command = [sys.executable, "-m", "windowrag_pg.cli", "eval",
               "--documents", str(EVAL_DIR / dataset / "documents.jsonl"),
               "--queries", str(EVAL_DIR / dataset / "queries.jsonl"), "--config", config.name,
               "--budgets", ",".join(map(str, BUDGETS)), "--seed", str(seed), "--json", "--rows",
               *(["--limit", str(limit)] if limit else [])]
    print(f"  {dataset}, floor {floor:g}", file=sys.stderr)
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True,
                          env={**os.environ, **({"WINDOWRAG_HOME": home} if home else {})})
    os.unlink(config.name)
    result = json.loads(done.stdout)
    result["uptime"] = os.popen("uptime").read().strip()
    OUT.mkdir(parents=True, exist_ok=True)
    floor_path(dataset, floor).write_text(json.dumps(result, default=str))


def at_equal_tokens(curve: list[tuple[float, float]], tokens: float) -> float | None:
    """Recall of a (mean tokens, recall) curve at TOKENS, linear between its points; None outside."""
    curve = sorted(curve)
    for (t0, r0), (t1, r1) in zip(curve, curve[1:]):
        if t0 <= tokens <= t1:
            return r0 + (r1 - r0) * (tokens - t0) / (t1 - t0) if t1 > t0 else max(r0, r1)
    return None


def report(floors: list[float]) -> list[str]:
    lines: list[str] = []
    for dataset, (metric, _) in DATASETS.items():
        runs = {f: json.loads(floor_path(dataset, f).read_text()) for f in floors if floor_path(dataset, f).exists()}
        if 0.0 not in runs:
            continue
        points = {f: {p["token_budget"]: p for p in r["curve"]} for f, r in runs.items()}
        base = points[0.0]
        curve = [(p["metrics"]["tokens_mean"], p["metrics"][metric]) for p in base.values()]
        lines += [f"{dataset}: {metric} ({runs[0.0]['n_queries']} queries, seed {runs[0.0]['seed']})", "",
                  "| budget | floor | recall | mean tokens | tokens p50 | against floor 0, same budget | "
                  "against floor 0, same mean tokens |", "|---:|---:|---:|---:|---:|---|---:|"]
        for budget in sorted(base):
            for floor in sorted(points):
                point = points[floor].get(budget)
                if point is None:
                    continue
                m = point["metrics"]
                same_budget = same_tokens = ""
                if floor:
                    ours = {r["id"]: r[metric] for r in point["rows"]}
                    pairs = [(r[metric], ours[r["id"]]) for r in base[budget]["rows"] if r["id"] in ours]
                    mean, low, high = paired_bootstrap([a for a, _ in pairs], [b for _, b in pairs])
                    same_budget = f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
                    there = at_equal_tokens(curve, m["tokens_mean"])
                    same_tokens = "" if there is None else f"{m[metric] - there:+.3f}"
                lines.append(f"| {budget:,} | {floor:g} | {m[metric]:.3f} | {m['tokens_mean']:,.0f} | "
                             f"{m['tokens_p50']:,.0f} | {same_budget} | {same_tokens} |")
        lines.append("")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="run the curves not yet in benchmarks/out first")
    parser.add_argument("--floors", default=",".join(f"{f:g}" for f in FLOORS),
                        help="sentence floors, comma-separated (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--home", default=None, help="WINDOWRAG_HOME of the runs (default: the environment's)")
    args = parser.parse_args()
    floors = [float(f) for f in args.floors.split(",")]
    if args.run:
        for floor in floors:
            for dataset in DATASETS:
                if not floor_path(dataset, floor).exists():
                    run(dataset, floor, home=args.home, seed=args.seed)
    print("\n".join(report(floors)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
