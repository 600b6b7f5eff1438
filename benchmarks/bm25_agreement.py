"""Ranking agreement of windowrag.bm25_search with exhaustive BM25 (every posting scored).

    python benchmarks/bm25_agreement.py --home /tmp/wr-bench --collections bench_100000 bench_1000000 \
        [--variants 1000:500 1000:200 500:200]

Uses the collections built by benchmarks/query.py. For each (per_term_limit:shortlist_size)
variant: overlap@50 of sentence ids, the share of ranks whose scores agree (identical copies of
a sentence score the same), the latency p50/p95 (prepare=False; run it alone), and what the
approximation costs the hybrid ranking: BM25 top-50 fused by RRF (k = 60) with the dense top-50
(windowrag.dense_search), and the share of SQuAD questions whose answer string is in one of the
top-10 fused sentences (exhaustive BM25 in the first row). Exhaustive scoring runs first for
every query, so the variants are timed on warm caches.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from windowrag_pg.db.embedded import start_embedded
from windowrag_pg.embed import get_embedder

# every list read whole: with no stale postings, bm25_search's phase 1 is then the exact answer
EXHAUSTIVE = """
SELECT sentence_id, score FROM windowrag.bm25_search(%(name)s, %(q)s, 50, per_term_limit => 2147483647)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", default="/tmp/wr-bench")
    parser.add_argument("--collections", nargs="+", default=["bench_100000", "bench_1000000"])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--variants", nargs="+", default=["2000:200", "500:200", "500:100", "250:100", "128:100", "128:50"],
                        help="per_term_limit:shortlist_size pairs (2000:200 is the default for n = 50)")
    parser.add_argument("--eval-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "eval"))
    args = parser.parse_args()
    questions = [json.loads(line) for line in open(Path(args.eval_dir) / "squad-dev" / "queries.jsonl")]
    embedder = get_embedder()
    random.Random(3).shuffle(questions)
    with psycopg.connect(start_embedded(Path(args.home)), autocommit=True) as conn:
        register_vector(conn)
        for name in args.collections:
            sample = questions[: args.queries]
            exact_rows = [conn.execute(EXHAUSTIVE, {"name": name, "q": q["query"]}, prepare=False).fetchall()
                          for q in sample]
            dense_rows = [[r[0] for r in conn.execute(
                "SELECT sentence_id FROM windowrag.dense_search(%s, %s, 50) ORDER BY rank",
                [name, embedder.embed_query(q["query"])], prepare=False).fetchall()] for q in sample]

            def answered(bm25_ids, dense_ids, answers) -> float:
                fused: dict[int, float] = {}
                for ranking in (bm25_ids, dense_ids):
                    for rank, sid in enumerate(ranking, start=1):
                        fused[sid] = fused.get(sid, 0.0) + 1.0 / (60 + rank)
                top = sorted(fused, key=lambda sid: (-fused[sid], sid))[:10]
                texts = [t.lower() for (t,) in conn.execute(
                    "SELECT text FROM windowrag.sentences WHERE id = ANY (%s)", [top]).fetchall()]
                return float(any(a.lower() in t for a in answers for t in texts))

            reference = np.mean([answered([r[0] for r in e], d, q["answers"])
                                 for e, d, q in zip(exact_rows, dense_rows, sample)])
            print(f"{name}: {len(sample)} questions; load {os.getloadavg()[0]:.2f}")
            print("| per_term_limit | shortlist_size | overlap@50 | score agreement@50 | p50 ms | p95 ms | "
                  "hybrid answer@10 |")
            print("|---:|---:|---:|---:|---:|---:|---:|")
            print(f"| exhaustive | – | 1.000 | 1.000 | – | – | {reference:.3f} |")
            for variant in args.variants:
                limit, shortlist = (int(x) for x in variant.split(":"))
                statement = ("SELECT sentence_id, score FROM windowrag.bm25_search(%s, %s, 50, "
                             "per_term_limit => %s, shortlist_size => %s)")
                overlap, agreement, times, hits = [], [], [], []
                for query, exact, dense in zip(sample, exact_rows, dense_rows):
                    started = time.perf_counter()
                    got = conn.execute(statement, [name, query["query"], limit, shortlist], prepare=False).fetchall()
                    times.append((time.perf_counter() - started) * 1000)
                    hits.append(answered([r[0] for r in got], dense, query["answers"]))
                    overlap.append(len({r[0] for r in exact} & {r[0] for r in got}) / max(1, len(exact)))
                    agreement.append(np.mean([abs(a[1] - b[1]) < 1e-6 for a, b in zip(exact, got)]) if exact else 1.0)
                print(f"| {limit} | {shortlist} | {np.mean(overlap):.3f} | {np.mean(agreement):.3f} | "
                      f"{np.percentile(times, 50):.1f} | {np.percentile(times, 95):.1f} | {np.mean(hits):.3f} |",
                      flush=True)


if __name__ == "__main__":
    main()
