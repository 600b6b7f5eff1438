"""Recall and latency of the rerank stage against R (windows reranked) and the tokens it reads.

    python benchmarks/rerank_curve.py --home /tmp/wr-eval quality   # recall; any load
    python benchmarks/rerank_curve.py --home /tmp/wr-eval timing    # latency; run it alone
    python benchmarks/rerank_curve.py --home /tmp/wr-eval report

Every run goes through `windowrag eval`'s runner (the Pipeline, as `windowrag query` runs it):
the `rerank` preset (hybrid, window 3, 50 candidates per list) with rerank_candidates = R and
rerank_tokens = T (0: the whole merged window, up to the model's 512), plus the same retrieval
without the cross-encoder (R = 0) as the reference.

quality: squad-dev (first --squad-limit questions of the seed-0 sample) and contractnli-dev
    (first --contract-limit); cross-encoder scores are cached in <home>/rerank_cache.jsonl, so
    configurations that read the same passages pay once. Latencies of this step are not used.
timing: the first --timing-queries of each sample with a fresh, non-caching reranker; p50/p95
    of the rerank stage and of the whole query (embed + SQL + fetch + rerank + assemble).
Results: benchmarks/out/rerank_curve/*.json, report benchmarks/out/rerank_curve.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
RESULTS = OUT / "rerank_curve"
EVAL = Path(os.environ.get("WINDOWRAG_EVAL_DIR", Path(__file__).resolve().parents[2] / "shared" / "eval"))
DATASETS = {"squad-dev": "hit@5", "contractnli-dev": "evidence_recall@5"}


def pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q / 100 * (len(ordered) - 1)))))] if ordered else None


def config_for(r: int, tokens: int):
    from windowrag_pg.evaluation.presets import PRESETS

    if r == 0:
        return PRESETS["rerank"].replace(name="hybrid_c50", rerank=False, rerank_tokens=None, rerank_token_budget=None)
    return PRESETS["rerank"].replace(name=f"rerank_R{r}_T{tokens or 'all'}", rerank_candidates=r,
                                     rerank_tokens=tokens or None, rerank_token_budget=None)


# the token-budget variants (R = 20 retrieved; scored in retrieval order within the budget;
# each window read up to T tokens): (budget, T)
BUDGETS = [(1800, 0), (1500, 0), (1500, 384)]


def budget_config(budget: int, tokens: int):
    from windowrag_pg.evaluation.presets import PRESETS

    return PRESETS["rerank"].replace(name=f"rerank_R20_tb{budget}" + (f"_T{tokens}" if tokens else ""),
                                     rerank_candidates=20, rerank_token_budget=budget, rerank_tokens=tokens or None)


def configs(args):
    for r in [0] + args.R:
        for tokens in ([0] if r == 0 else args.tokens):
            yield config_for(r, tokens)
    for budget, tokens in BUDGETS:
        yield budget_config(budget, tokens)


def run(args, step: str) -> None:
    os.environ["WINDOWRAG_HOME"] = str(args.home)  # --home decides, as it does for the cache below
    from windowrag_pg.db.connection import connect
    from windowrag_pg.embed import get_embedder
    from windowrag_pg.evaluation.runner import CachingReranker, run_eval
    from windowrag_pg.rerank import get_reranker

    conn = connect(None, autocommit=True)
    embedder = get_embedder()
    inner = get_reranker()
    reranker = CachingReranker(inner, path=Path(args.home) / "rerank_cache.jsonl") if step == "quality" else inner
    RESULTS.mkdir(parents=True, exist_ok=True)
    for dataset in DATASETS:
        limit = {"quality": args.squad_limit if dataset == "squad-dev" else args.contract_limit,
                 "timing": args.timing_queries}[step]
        for config in configs(args):
            path = RESULTS / f"{step}_{dataset}_{config.name}.json"
            if path.exists() and not args.force:
                continue
            result = run_eval(conn, documents_path=EVAL / dataset / "documents.jsonl",
                              queries_path=EVAL / dataset / "queries.jsonl", config=config, limit=limit,
                              seed=0, embedder=embedder, reranker=reranker, keep_rows=True)
            rows = result.pop("rows")
            result["rerank_ms"] = [row["latency_rerank_ms"] for row in rows]
            result["total_ms"] = [row["latency_ms"] for row in rows]
            path.write_text(json.dumps(result, indent=1))
            m = result["metrics"]
            print(f"{step} {dataset} {config.name}: {DATASETS[dataset]} {m[DATASETS[dataset]]:.3f} "
                  f"rerank p50 {pct(result['rerank_ms'], 50):.0f} ms, total p50 {pct(result['total_ms'], 50):.0f} ms",
                  flush=True)


def report(args) -> None:
    lines = ["# Rerank stage: recall and latency against R and tokens read", "",
             "`python benchmarks/rerank_curve.py` — rerank_R<R>_T<T>: R windows reranked, each read up to T "
             "tokens (whole sentences around the hits; `all` = the whole window, cut at 512 by the model); "
             "rerank_R20_tb<B>[_T<T>]: 20 windows retrieved, scored in retrieval order within B tokens "
             "(at least k); hybrid_c50: the same retrieval without the cross-encoder.", ""]
    for dataset, metric in DATASETS.items():
        lines += [f"## {dataset} ({metric})", "",
                  "| configuration | queries | " + metric + " | hit@1 | mrr | tokens sent (mean) | timing queries | "
                  "rerank p50 ms | rerank p95 ms | query p50 ms | query p95 ms | load (timing) |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for config in configs(args):
            name = config.name
            quality = RESULTS / f"quality_{dataset}_{name}.json"
            timing = RESULTS / f"timing_{dataset}_{name}.json"
            if not quality.exists():
                continue
            q = json.loads(quality.read_text())
            m = q["metrics"]
            cells = [name, str(q["n_queries"]), f"{m[metric]:.3f}", f"{m['hit@1']:.3f}",
                     f"{m['mrr']:.3f}", f"{m['tokens_mean']:.0f}"]
            if timing.exists():
                t = json.loads(timing.read_text())
                cells += [str(t["n_queries"]), f"{pct(t['rerank_ms'], 50):.0f}", f"{pct(t['rerank_ms'], 95):.0f}",
                          f"{pct(t['total_ms'], 50):.0f}", f"{pct(t['total_ms'], 95):.0f}",
                          f"{t['load']['before']['loadavg_1m']}–{t['load']['after']['loadavg_1m']}"]
            else:
                cells += ["–"] * 6
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    text = "\n".join(lines) + "\n"
    (OUT / "rerank_curve.md").write_text(text)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=["quality", "timing", "report"])
    parser.add_argument("--home", default="/tmp/wr-eval", help="WINDOWRAG_HOME of the evaluation server")
    parser.add_argument("--R", type=int, nargs="+", default=[5, 10, 20, 40])
    parser.add_argument("--tokens", type=int, nargs="+", default=[0, 256, 128], help="0: the whole window")
    parser.add_argument("--squad-limit", type=int, default=300)
    parser.add_argument("--contract-limit", type=int, default=100)
    parser.add_argument("--timing-queries", type=int, default=40)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    if args.step != "report":
        print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), flush=True)
        run(args, args.step)
    report(args)


if __name__ == "__main__":
    main()
