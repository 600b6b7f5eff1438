"""What an HNSW index over a transform of the embeddings finds: recall@5 against exact search,
index bytes a row and query time, for the layouts considered for the collections' index.

    python benchmarks/vector_index_layouts.py --home /tmp/wr-side-by-side/windowrag --scratch /tmp/wr-layouts

Reads every embedding of a collection (e.g. the windowrag side of a benchmarks/side_by_side.py run;
its server must be stopped) and the 200 SQuAD questions of benchmarks/query.py, loads them into a
scratch table of a fresh embedded server (--scratch) and builds one HNSW index (m = 24, as the
library) after the other, each over one transform t of the stored vector e:
- e itself (the library's index before migration 0022);
- e - c, c the mean of the rows (the library's index since 0022);
- e - c', c' the mean of the 40 background sentences of windowrag_pg/embed/background.py (a centre
  known before any row: would it do as well?);
- the first D principal components of e, and of e - c (the rows rotated onto their principal
  axes, an orthogonal rotation that leaves cosines between full vectors unchanged: a heap holding
  rotated vectors could index subvector(e, 1, D)): a graph of fewer bytes.
Each query reads the ef_search nearest by t through the index and re-ranks them by the cosine of
the full vectors in the same statement (dense_search's plan for a centred or binary index), so
the figures differ from the index's own top 5 only by that re-ranking. With --pools, also the
ceiling of the principal components in numpy (the exact top N by the projection, re-ranked).
Prints Markdown tables.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
from pgvector import HalfVector
from pgvector.psycopg import register_vector
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))
import query as q  # noqa: E402
from binary_centering import collection_vectors  # noqa: E402

from windowrag_pg.db.embedded import start_embedded, stop_embedded  # noqa: E402
from windowrag_pg.embed import get_embedder  # noqa: E402
from windowrag_pg.embed.background import BACKGROUND_SENTENCES  # noqa: E402

EF_SEARCHES = (40, 100, 200, 400)


def principal_rotation(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The collection's principal axes as columns (an orthogonal matrix) and their variances,
    by decreasing variance."""
    variances, axes = np.linalg.eigh(np.cov((vectors - vectors.mean(axis=0)).T))
    return axes[:, ::-1].astype(np.float32), variances[::-1]


def ceiling(rotated: np.ndarray, queries: np.ndarray, exact: np.ndarray, dims: int, pools: list[int]) -> list[float]:
    """Recall@5 of re-ranking the exact top N by cosine over the first DIMS components."""
    projected = rotated[:, :dims] / np.linalg.norm(rotated[:, :dims], axis=1, keepdims=True)
    found = dict.fromkeys(pools, 0)
    for i, query in enumerate(queries):
        scores = projected @ (query[:dims] / np.linalg.norm(query[:dims]))
        for pool in pools:
            candidates = np.argpartition(-scores, pool)[:pool]
            top = candidates[np.argsort(-(rotated[candidates] @ query))[:5]]
            found[pool] += len(set(top) & set(exact[i]))
    return [found[p] / (5 * len(queries)) for p in pools]


def measure(conn, rows: np.ndarray, indexed: np.ndarray, queries: np.ndarray, indexed_queries: np.ndarray,
            exact: np.ndarray) -> tuple[float, float, list[tuple[float, float]]]:
    """Build seconds, index bytes a row, and (recall@5, p50 ms) per ef_search, for an HNSW over
    INDEXED (one vector per row of ROWS), the pool re-ranked by ROWS."""
    dims = indexed.shape[1]
    conn.execute("DROP TABLE IF EXISTS scratch")
    conn.execute(sql.SQL("CREATE TABLE scratch (id integer, e halfvec({}), t halfvec({}))")
                 .format(sql.Literal(rows.shape[1]), sql.Literal(dims)))
    with conn.cursor().copy("COPY scratch (id, e, t) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int4", "halfvec", "halfvec"])
        for i, (row, transformed) in enumerate(zip(rows, indexed)):
            copy.write_row([i, HalfVector(row), HalfVector(transformed)])
    started = time.perf_counter()
    conn.execute("CREATE INDEX scratch_hnsw ON scratch USING hnsw (t halfvec_cosine_ops) WITH (m = 24)")
    build_seconds = time.perf_counter() - started
    size = conn.execute("SELECT pg_relation_size('scratch_hnsw')").fetchone()[0]
    statement = ("SELECT id FROM (SELECT id, e FROM scratch ORDER BY t <=> %(t)s LIMIT %(pool)s) pool "
                 "ORDER BY e <=> %(e)s LIMIT 5")
    results = []
    for ef_search in EF_SEARCHES:
        conn.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(ef_search)))
        found, seconds = 0, []
        for i, (query, transformed) in enumerate(zip(queries, indexed_queries)):
            params = {"t": HalfVector(transformed), "e": HalfVector(query), "pool": ef_search}
            started = time.perf_counter()
            ids = [r[0] for r in conn.execute(statement, params, prepare=False)]
            seconds.append(time.perf_counter() - started)
            found += len(set(ids) & set(exact[i]))
        results.append((found / (5 * len(queries)), 1000 * float(np.median(seconds))))
    return build_seconds, size / len(rows), results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--scratch", type=Path, required=True, help="home of the scratch server")
    parser.add_argument("--collection", default="side_by_side")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dims", default="96,128", help="principal components to index ('' for none)")
    parser.add_argument("--pools", default="", help="e.g. 50,100,200,400: the numpy ceiling of the components")
    args = parser.parse_args()
    embedder = get_embedder()
    _, query_vectors = q.load_queries(embedder, args.queries + args.warmup, args.seed)
    queries = query_vectors[args.warmup:].astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    vectors = collection_vectors(args.home, args.collection)
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :5]
    mean = vectors.mean(axis=0)
    background = np.asarray(embedder.embed_documents(list(BACKGROUND_SENTENCES)), dtype=np.float32).mean(axis=0)
    rotation, variances = principal_rotation(vectors)
    rotated, rotated_queries = vectors @ rotation, queries @ rotation
    dims = [int(d) for d in args.dims.split(",") if d]
    print(f"{len(vectors):,} vectors, {len(queries)} questions; the rows' mean has norm {np.linalg.norm(mean):.2f}, "
          f"the background's {np.linalg.norm(background):.2f} (cosine between them "
          f"{mean @ background / np.linalg.norm(mean) / np.linalg.norm(background):.2f})"
          + "".join(f"; {d} components hold {variances[:d].sum() / variances.sum():.0%} of the variance" for d in dims))
    if args.pools and dims:
        pools = [int(p) for p in args.pools.split(",")]
        print("\nRe-ranking the exact top N by the first D principal components (numpy):\n")
        print("| components | " + " | ".join(f"pool {p}" for p in pools) + " |")
        print("|---:|" + "---:|" * len(pools))
        for d in dims:
            print(f"| {d} | " + " | ".join(f"{r:.3f}" for r in ceiling(rotated, rotated_queries, exact, d, pools)) + " |")
    centred_rotated, centred_rotated_queries = (vectors - mean) @ rotation, (queries - mean) @ rotation
    layouts = [("e (before 0022)", vectors, queries),
               ("e - the rows' mean (0022)", vectors - mean, queries - mean),
               ("e - the background's mean", vectors - background, queries - background)]
    for d in dims:
        layouts += [(f"the first {d} principal components of e", rotated[:, :d], rotated_queries[:, :d]),
                    (f"the first {d} principal components of e - the rows' mean", centred_rotated[:, :d],
                     centred_rotated_queries[:, :d])]
    url = start_embedded(args.scratch)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
            conn.execute("SET maintenance_work_mem = '2GB'")
            print("\nHNSW (m = 24) over t, the ef_search nearest re-ranked by the cosine of e (recall@5 / p50 ms):\n")
            print("| index over t = | build s | index B/row | " + " | ".join(f"ef_search {e}" for e in EF_SEARCHES) + " |")
            print("|---|---:|---:|" + "---:|" * len(EF_SEARCHES))
            for label, indexed, indexed_queries in layouts:
                build, size, results = measure(conn, vectors, indexed, queries, indexed_queries, exact)
                print(f"| {label} | {build:.1f} | {size:,.0f} | "
                      + " | ".join(f"{r:.3f} / {ms:.2f}" for r, ms in results) + " |", flush=True)
            conn.execute("DROP TABLE scratch")
    finally:
        stop_embedded(args.scratch)


if __name__ == "__main__":
    main()
