"""Can sign bits find the exact top 5? Recall@5 of re-ranking the exact Hamming top N by the stored
vectors, with the bits of the vectors as stored and after subtracting the collection's mean vector.

    python benchmarks/binary_centering.py --home /tmp/wr-sbs-0019/windowrag

Reads every embedding of a collection (e.g. the windowrag side of a benchmarks/side_by_side.py run;
its server must be stopped) and the 200 SQuAD questions of benchmarks/query.py, and counts in numpy
(no index: what the binary HNSW index could at best find with a pool of N). Prints a table.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

sys.path.insert(0, str(Path(__file__).resolve().parent))
import query as q  # noqa: E402

from windowrag_pg.db.embedded import start_embedded, stop_embedded  # noqa: E402
from windowrag_pg.embed import get_embedder  # noqa: E402

POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.int32)


def collection_vectors(home: Path, collection: str) -> np.ndarray:
    url = start_embedded(home)
    try:
        with psycopg.connect(url) as conn:
            register_vector(conn)
            rows = conn.execute("SELECT s.embedding::vector FROM windowrag.sentences s JOIN windowrag.collections c "
                                "ON c.id = s.collection_id WHERE c.name = %s ORDER BY s.id", [collection])
            vectors = np.asarray([r[0].to_numpy() for r in rows], dtype=np.float32)
    finally:
        stop_embedded(home)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--collection", default="side_by_side")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pools", default="50,100,200,400")
    args = parser.parse_args()
    _, qvecs = q.load_queries(get_embedder(), args.queries + args.warmup, args.seed)
    queries = qvecs[args.warmup:].astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    vectors = collection_vectors(args.home, args.collection)
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :5]
    mean = vectors.mean(axis=0)
    pools = [int(p) for p in args.pools.split(",")]
    print(f"{len(vectors):,} vectors, mean vector norm {np.linalg.norm(mean):.2f}, {len(queries)} questions")
    print("| bits of | " + " | ".join(f"pool {p}" for p in pools) + " |")
    print("|---|" + "---:|" * len(pools))
    for label, centre in (("the vectors as stored", 0 * mean), ("the vectors minus their mean", mean)):
        bits, query_bits = np.packbits(vectors - centre > 0, axis=1), np.packbits(queries - centre > 0, axis=1)
        found = dict.fromkeys(pools, 0)
        for i in range(len(queries)):
            hamming = POPCOUNT[np.bitwise_xor(query_bits[i][None, :], bits)].sum(axis=1)
            for pool in pools:
                candidates = np.argpartition(hamming, pool)[:pool]
                top = candidates[np.argsort(-(vectors[candidates] @ queries[i]))[:5]]
                found[pool] += len(set(top) & set(exact[i]))
        print(f"| {label} | " + " | ".join(f"{found[p] / (5 * len(queries)):.3f}" for p in pools) + " |")


if __name__ == "__main__":
    main()
