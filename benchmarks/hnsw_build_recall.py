"""Does a denser HNSW graph reach dense recall@5 >= 0.99 at ef_search 100? Recall and build time by
HNSW build setting, on a side-by-side collection's vectors.

    python benchmarks/hnsw_build_recall.py --home /tmp/wr-side-by-side/windowrag --builds 24:64,24:256,16:256

The collection's halfvecs are copied into a scratch table (dropped at the end); for each build
(m:ef_construction) the index is built with one parallel maintenance worker (the library's
setting), then the 200 SQuAD questions of benchmarks/query.py (after 20 warm-up ones) are asked
at ef_search 40 / 100 / 200, prepare=False; recall@5 against exact cosine search over the same
halfvecs (numpy). Build seconds, index bytes per row, recall and p50 latency go to
benchmarks/out/hnsw_build_recall.md. One build of each setting: pgvector's parallel build does not
make the same graph twice, so run it more than once before trusting a difference of 0.01.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
from psycopg import sql
from pgvector.psycopg import register_vector

sys.path.insert(0, str(Path(__file__).resolve().parent))

import query as bench  # noqa: E402  (benchmarks/query.py: the cached question sample)

from windowrag_pg.db.embedded import start_embedded  # noqa: E402
from windowrag_pg.embed import get_embedder  # noqa: E402

EF_SEARCH = (40, 100, 200)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="the windowrag server home of a side_by_side.py run")
    parser.add_argument("--builds", default="24:64,24:256", help="m:ef_construction, comma-separated")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    builds = [tuple(int(x) for x in b.split(":")) for b in args.builds.split(",")]
    # cached by side_by_side.py for its own --queries; any other count is embedded here
    _, qvecs = bench.load_queries(get_embedder(), args.queries + 20, 7)
    qvecs = np.asarray(qvecs[20:], dtype=np.float32)
    lines = [f"## HNSW build settings and dense recall@5 ({time.strftime('%Y-%m-%d %H:%M')})", "",
             f"- command: `python {' '.join(sys.argv)}`", f"- load: {bench.uptime()}", "",
             "| m | ef_construction | build s | index B / row | " + " | ".join(
                 f"recall@5, p50 ms at ef_search {ef}" for ef in EF_SEARCH) + " |",
             "|---:|---:|---:|---:|" + "---:|" * len(EF_SEARCH)]
    with psycopg.connect(start_embedded(args.home), autocommit=True) as conn:
        register_vector(conn)
        conn.execute("SET statement_timeout = 0")
        conn.execute("SET maintenance_work_mem = '4GB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        dimension = conn.execute("SELECT dimension FROM windowrag.collections ORDER BY id LIMIT 1").fetchone()[0]
        conn.execute("DROP TABLE IF EXISTS public.hnsw_build_recall")
        halfvec = sql.SQL("halfvec({})").format(sql.Literal(dimension))  # a typmod: a literal, not a parameter
        conn.execute(sql.SQL("CREATE TABLE public.hnsw_build_recall AS SELECT id, embedding::{} AS e"
                             " FROM windowrag.sentences WHERE collection_id = (SELECT min(id) FROM windowrag.collections)"
                             ).format(halfvec))
        try:
            rows = conn.execute("SELECT id, e::vector FROM public.hnsw_build_recall ORDER BY id").fetchall()
            ids = np.array([r[0] for r in rows])
            vectors = np.stack([r[1].to_numpy() for r in rows]).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            exact = [set(ids[np.argsort(-(vectors @ (q / np.linalg.norm(q))))[:5]]) for q in qvecs]
            top5 = sql.SQL("SELECT id FROM public.hnsw_build_recall ORDER BY e <=> %s::vector::{} LIMIT 5").format(halfvec)
            for m, ef_construction in builds:
                conn.execute("DROP INDEX IF EXISTS public.hnsw_build_recall_e")
                started = time.perf_counter()
                conn.execute(sql.SQL("CREATE INDEX hnsw_build_recall_e ON public.hnsw_build_recall USING hnsw"
                                     " (e halfvec_cosine_ops) WITH (m = {}, ef_construction = {})"
                                     ).format(sql.Literal(m), sql.Literal(ef_construction)))
                build = time.perf_counter() - started
                size = conn.execute("SELECT pg_relation_size('public.hnsw_build_recall_e')").fetchone()[0]
                cells = []
                for ef in EF_SEARCH:
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", [str(ef)])
                    found, times = 0, []
                    for q, truth in zip(qvecs, exact):
                        started = time.perf_counter()
                        got = conn.execute(top5, [q], prepare=False).fetchall()
                        times.append((time.perf_counter() - started) * 1000)
                        found += len(truth & {r[0] for r in got})
                    cells.append(f"{found / (5 * len(exact)):.3f}, {np.median(times):.2f}")
                lines.append(f"| {m} | {ef_construction} | {build:.1f} | {size / len(ids):,.0f} | " + " | ".join(cells) + " |")
                print(lines[-1], flush=True)
        finally:
            conn.execute("DROP TABLE IF EXISTS public.hnsw_build_recall")
    bench.OUT.mkdir(parents=True, exist_ok=True)
    (bench.OUT / "hnsw_build_recall.md").write_text("\n".join(lines) + "\n")
    print(f"written to {bench.OUT / 'hnsw_build_recall.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
