"""Whole-query latency of the library's default pipeline at 100k sentences, against the fixed
windows in the same run (queries interleaved, one against each in turn).

    python benchmarks/pipeline_latency.py --size 100000 --queries 200 --home /tmp/wr-bench

The collection is the one benchmarks/query.py builds (real squad-dev and handbook sentences,
their real vectors, noisy copies up to SIZE; see that script's docstring), reused when present.
Each query runs through Pipeline.search as a user calls it — query embedding (BGE-small ONNX)
included, no cross-encoder — once with the defaults (budget-first segments) and once with
selection="windows" (window 3, cut to the same budget). Prints p50/p95 per stage; a report,
not a timed test.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import query as bench  # noqa: E402  (benchmarks/query.py: the collection builder)

from windowrag_pg.db.connection import connect  # noqa: E402
from windowrag_pg.embed import get_embedder  # noqa: E402
from windowrag_pg.pipeline import Pipeline  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--home", type=Path, default=Path("/tmp/wr-bench"))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    bench.OUT.mkdir(parents=True, exist_ok=True)
    embedder = get_embedder()
    texts, vectors = bench.cached_units("squad", bench.EVAL / "squad-dev" / "documents.jsonl", 1, embedder)
    hb_texts, hb_vectors = bench.cached_units("handbook_every16", bench.EVAL / "handbook" / "documents.jsonl", 16, embedder)
    texts = texts + hb_texts
    base = bench.np.concatenate([vectors, hb_vectors]).astype(bench.np.float32)
    url = bench.configure_server(args.home)
    conn = connect(url, autocommit=True)
    name = f"bench_{args.size}"
    if bench.collection_row(conn, name) is None:
        source, noisy = bench.make_vectors(base, args.size, 0.015, args.seed + args.size)
        bench.build_collection(conn, name, texts, embedder.count_tokens(texts), source, noisy, 10_000)
        bench.build_hnsw(conn, name)
    queries, _ = bench.load_queries(embedder, args.queries + args.warmup, args.seed)
    pipeline = Pipeline(conn, collection=name, embedder=embedder)
    runs = {"segments (default)": {}, "windows (window 3)": {"selection": "windows"}}
    times: dict[str, dict[str, list[float]]] = {label: {} for label in runs}
    for number, query in enumerate(queries):
        for label, options in runs.items():
            trace = pipeline.search(query, **options).trace["timings_ms"]
            if number >= args.warmup:
                for stage, ms in trace.items():
                    times[label].setdefault(stage, []).append(ms)
    print(f"## Whole query at {args.size:,} sentences ({args.queries} SQuAD questions, interleaved; "
          f"load: {bench.uptime()})\n")
    checked = len(times["segments (default)"].get("verify", []))
    print(f"The abstention's cross-encoder check ran on {checked} of {args.queries} queries of the default "
          "(its row: p50 / p95 of those only).\n")
    print("| pipeline | stage | p50 ms | p95 ms |\n|---|---|---:|---:|")
    for label, stages in times.items():
        for stage, values in stages.items():
            print(f"| {label} | {stage} | {statistics.median(values):.1f} | {bench.pct(values, 95):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
