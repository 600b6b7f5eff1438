"""halfvec against vector: dense recall@5 of the HNSW index against exact search, and bytes per
sentence of the sentences heap and the HNSW index, before (0009: vector) and after (0010: halfvec).

    python benchmarks/halfvec_recall.py --size 100000 --queries 200 --home /tmp/wr-halfvec

How (the rows are benchmarks/query.py's, built by its own functions):
1. Real units: every squad-dev article and every 16th handbook page, split by windowrag_pg and
   embedded with the default embedder (BGE-small INT8 ONNX); vectors cached in
   benchmarks/out/units_*.npy. A size-S collection takes real unit perm[i mod N0]; past the N0
   real units, copies get N(0, 0.015²) noise per component, re-normalised (query.py's
   make_vectors). Queries: real SQuAD dev questions (seeded sample), embedded with the query
   instruction.
2. A fresh embedded server (its own --home) is migrated to 0009 only: embeddings stored as
   vector. The collection is loaded with single-precision vectors (query.py's build_collection)
   and its HNSW index built as 0009 builds it (embedding::vector(384), vector_cosine_ops, m 16,
   ef_construction 64). Measured: heap and index bytes, recall@5.
3. The server is upgraded to 0010 by the migration itself (the conversion users run: column to
   halfvec, index rebuilt on embedding::halfvec(384)), timed. Measured again.
4. Recall@5 = |top 5 of windowrag.dense_search (ef_search 100, the library's default) ∩ exact
   top 5| / 5, averaged over the queries. Exact = brute force cosine over the full-precision
   float32 vectors (numpy; the same ranking as a sequential scan over the vector column, which
   is checked on a few queries). "halfvec exact" is the brute force over the vectors rounded to
   half precision: what the rounding alone costs, without HNSW.

Bytes per sentence: pg_table_size(windowrag.sentences) (heap + TOAST + FSM + VM) and
pg_relation_size of the collection's HNSW index, divided by the number of sentences (one
collection in the database). Load average quoted at start and end: the machine is shared.

Result at 100k (8,129 real units + noisy copies, 200 queries; 2 cores shared with a CI run, load
average 1.3 at start, 3.1 at the end; HNSW on halfvec with m = 24, the vector one as 0009 built it,
m = 16):

| storage | recall@5 ef 100 | ef 200 | ef 400 | heap B/sentence | HNSW B/sentence | heap + HNSW |
|---|---:|---:|---:|---:|---:|---:|
| 0009: vector | 0.951 | 0.980 | 0.990 | 2,114 | 2,045 | 4,159 |
| 0010: halfvec | 0.983 | 0.995 | 1.000 | 1,306 | 1,217 | 2,523 |

halfvec / vector: heap 0.62, HNSW 0.60, both 0.61. Rounding alone (exact search over the
half-rounded vectors): 0.999. Migration 0009 → 0010 of the 100k rows: 56 s. With pgvector's
default m = 16 the halfvec graph found less than the vector one (0.927, 0.944, 0.933 in three
builds against 0.959, 0.957 at ef_search 100; 1,169 B/sentence), hence m = 24.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))
import query as q  # noqa: E402  benchmarks/query.py: real units, vectors, bulk loader

from windowrag_pg.db import connection as db  # noqa: E402
from windowrag_pg.db.embedded import stop_embedded  # noqa: E402
from windowrag_pg.embed import get_embedder  # noqa: E402

NAME = "halfvec_bench"
EF_SEARCH = (100, 200, 400)  # 100: the library's default
VECTOR_INDEX = ("CREATE INDEX {index_name} ON windowrag.sentences "  # as 0009 built it (0010_halfvec.py)
                "USING hnsw ((embedding::vector({dimension})) vector_cosine_ops) WHERE collection_id = {collection_id}")


def exact_top(vectors: np.ndarray, first_id: int, qvecs: np.ndarray, k: int) -> list[list[int]]:
    """Ids of the k nearest rows by cosine (ties: smaller id), brute force."""
    norms = np.linalg.norm(vectors, axis=1)
    tops = []
    for qv in qvecs:
        sims = (vectors @ qv) / (norms * np.linalg.norm(qv))
        order = np.lexsort((np.arange(len(sims)), -sims))[:k]
        tops.append([first_id + int(i) for i in order])
    return tops


def measure(conn, cid: int, first_id: int, qvecs: np.ndarray, truth: list[list[int]], k: int,
            source: np.ndarray) -> dict:
    size = conn.execute("SELECT count(*) FROM windowrag.sentences WHERE collection_id = %s", [cid]).fetchone()[0]
    index = f"windowrag.sentences_embedding_hnsw_c{cid}"
    heap = conn.execute("SELECT pg_table_size('windowrag.sentences')").fetchone()[0]
    hnsw = conn.execute("SELECT pg_relation_size(%s::regclass)", [index]).fetchone()[0]
    column = conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                          "WHERE attrelid = 'windowrag.sentences'::regclass AND attname = 'embedding'").fetchone()[0]
    # the HNSW index must serve dense_search's statement
    plan = json.dumps(conn.execute(sql.SQL(
        "EXPLAIN (FORMAT JSON) SELECT s.id FROM windowrag.sentences s WHERE s.collection_id = {cid} "
        "ORDER BY s.embedding::{t}(384) <=> %s::{t}(384) LIMIT 5").format(
            cid=sql.Literal(cid), t=sql.Identifier(column)), [qvecs[0]]).fetchone()[0])
    assert index.split(".")[1] in plan, plan
    recall, p50, by_source = {}, {}, {}
    unit = lambda ids: {int(source[i - first_id]) for i in ids}  # noqa: E731  the real sentence a row copies
    for ef in EF_SEARCH:
        found, times = [], []
        for qv in qvecs:
            started = time.perf_counter()
            rows = conn.execute("SELECT sentence_id FROM windowrag.dense_search(%s, %s, %s, NULL, %s)",
                                [NAME, qv, k, ef]).fetchall()
            times.append(time.perf_counter() - started)
            found.append([r[0] for r in rows])
        recall[ef] = float(np.mean([len(set(f) & set(t)) / k for f, t in zip(found, truth)]))
        by_source[ef] = float(np.mean([len(unit(f) & unit(t)) / len(unit(t)) for f, t in zip(found, truth)]))
        p50[ef] = 1000 * q.pct(times, 50)
    return {"column": column, "size": size, "heap": heap, "hnsw": hnsw, "recall": recall, "p50_ms": p50,
            "by_source": by_source}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--home", type=Path, default=Path("/tmp/wr-halfvec"), help="this benchmark's own server")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--noise", type=float, default=0.015)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--keep-server", action="store_true")
    args = parser.parse_args()
    k = 5
    q.OUT.mkdir(parents=True, exist_ok=True)
    load_start = q.uptime()
    embedder = get_embedder()
    squad_texts, squad_vecs = q.cached_units("squad", q.EVAL / "squad-dev" / "documents.jsonl", 1, embedder)
    hb_texts, hb_vecs = q.cached_units("handbook_every16", q.EVAL / "handbook" / "documents.jsonl", 16, embedder)
    texts = squad_texts + hb_texts
    base = np.concatenate([squad_vecs, hb_vecs]).astype(np.float32)
    tokens = embedder.count_tokens(texts)
    queries, qvecs = q.load_queries(embedder, args.queries, args.seed)
    source, vectors = q.make_vectors(base, args.size, args.noise, args.seed + args.size)

    url = q.configure_server(args.home)
    report = [f"- rows: {args.size:,} ({len(texts):,} real units: {len(squad_texts):,} squad-dev + "
              f"{len(hb_texts):,} handbook; the rest noisy copies), {len(queries)} SQuAD dev questions, seed {args.seed}",
              f"- load at start: `{load_start}`"]
    try:
        with psycopg.connect(url, autocommit=True) as raw:
            if db.current_revision(raw) is not None:
                sys.exit(f"{args.home}: the database is not fresh; use a new --home")
            db.upgrade(raw, "0009")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET statement_timeout = 0")
            from pgvector.psycopg import register_vector
            register_vector(conn)
            q.log(f"loading {args.size} rows at 0009 (vector); load: {q.uptime()}")
            q.build_collection(conn, NAME, texts, tokens, source, vectors, args.batch)
            cid = q.collection_row(conn, NAME)[0]
            first_id = conn.execute("SELECT min(id) FROM windowrag.sentences WHERE collection_id = %s",
                                    [cid]).fetchone()[0]
            conn.execute("SET maintenance_work_mem = '4GB'")
            conn.execute("SET max_parallel_maintenance_workers = 1")
            started = time.perf_counter()
            conn.execute(sql.SQL(VECTOR_INDEX).format(
                index_name=sql.Identifier(f"sentences_embedding_hnsw_c{cid}"), dimension=sql.Literal(384),
                collection_id=sql.Literal(cid)))
            vector_build = time.perf_counter() - started
            conn.execute("ANALYZE windowrag.sentences")
            q.log(f"vector HNSW built in {vector_build:.0f} s")
            truth = exact_top(vectors, first_id, qvecs, k)
            half_truth = exact_top(vectors.astype(np.float16).astype(np.float32), first_id, qvecs, k)
            # the brute force ranks as a sequential scan over the vector column does
            seqscan = []
            with conn.transaction():
                conn.execute("SET LOCAL enable_indexscan = off")
                for i in range(min(10, len(qvecs))):
                    rows = conn.execute("SELECT id FROM windowrag.sentences WHERE collection_id = %s "
                                        "ORDER BY embedding <=> %s, id LIMIT %s", [cid, qvecs[i], k]).fetchall()
                    seqscan.append(len({r[0] for r in rows} & set(truth[i])) / k)
            before = measure(conn, cid, first_id, qvecs, truth, k, source)
            q.log(f"0009: {before}")

        with psycopg.connect(url, autocommit=True) as conn:
            q.log(f"migrating to 0010 (halfvec); load: {q.uptime()}")
            started = time.perf_counter()
            db.upgrade(conn)
            migration = time.perf_counter() - started
            q.log(f"migrated in {migration:.0f} s")
        with db.connect(url, autocommit=True) as conn:
            conn.execute("SET statement_timeout = 0")
            conn.execute("ANALYZE windowrag.sentences")
            after = measure(conn, cid, first_id, qvecs, truth, k, source)
            q.log(f"0010: {after}")
        half_exact = float(np.mean([len(set(a) & set(t)) / k for a, t in zip(half_truth, truth)]))
    finally:
        if not args.keep_server:
            stop_embedded(args.home, timeout=120)

    n = before["size"]
    lines = ["| storage | " + " | ".join(f"recall@5 ef {ef}" for ef in EF_SEARCH) + " | sentences heap B/sentence "
             "| HNSW B/sentence | heap + HNSW B/sentence | " + " | ".join(f"p50 ms ef {ef}" for ef in EF_SEARCH) + " |",
             "|---|" + "---:|" * (4 + 2 * len(EF_SEARCH))]
    for label, m in (("0009: vector", before), ("0010: halfvec", after)):
        lines.append(f"| {label} | " + " | ".join(f"{m['recall'][ef]:.4f}" for ef in EF_SEARCH)
                     + f" | {m['heap'] / n:,.0f} | {m['hnsw'] / n:,.0f} | {(m['heap'] + m['hnsw']) / n:,.0f} | "
                     + " | ".join(f"{m['p50_ms'][ef]:.1f}" for ef in EF_SEARCH) + " |")
    total_before, total_after = before["heap"] + before["hnsw"], after["heap"] + after["hnsw"]
    report += ["", *lines, "",
               f"- halfvec / vector: heap {after['heap'] / before['heap']:.2f}, HNSW {after['hnsw'] / before['hnsw']:.2f}, "
               f"heap + HNSW {total_after / total_before:.2f}",
               f"- brute force (numpy) vs a sequential scan of the vector column, top 5 on 10 queries: "
               f"{np.mean(seqscan):.4f}",
               "- recall@5 by real sentence (a noisy copy counts as its original: whether the misses are only "
               "copies of the right sentences): "
               + "; ".join(f"{label} " + ", ".join(f"ef {ef}: {m['by_source'][ef]:.4f}" for ef in EF_SEARCH)
                           for label, m in (("vector", before), ("halfvec", after))),
               f"- exact top 5 over the half-rounded vectors vs the float32 ones (rounding alone): {half_exact:.4f}",
               f"- vector HNSW build {vector_build:.0f} s; migration 0009 → 0010 (rewrite + halfvec HNSW build) {migration:.0f} s",
               f"- load at end: `{q.uptime()}`"]
    print("\n".join(report))


if __name__ == "__main__":
    main()
