"""16 concurrent asearch calls on an AsyncConnectionPool of 4 against 16 sequential calls.

    python benchmarks/async_concurrency.py --home /tmp/wr-async --articles 24 --rounds 3

A report, not a timed test. Setup: an embedded server in --home (created if needed), the first
--articles squad-dev articles ingested (default embedder), --calls real SQuAD dev questions
about them (seeded sample). One AsyncPipeline on a pool of --pool connections; models loaded and
every connection prepared before timing. Each round times the same calls:
sequential (one `await pipeline.search(q)` after the other) and concurrent
(`asyncio.gather` of all of them); the sync `Pipeline.search` sequentially is the reference.
The report gives the median of the rounds and the ratio concurrent / sequential.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from pathlib import Path

from psycopg_pool import AsyncConnectionPool

from windowrag_pg import AsyncPipeline, Ingestor, Pipeline
from windowrag_pg.db.connection import connect
from windowrag_pg.db.embedded import start_embedded
from windowrag_pg.sources import SourceDocument

EVAL = Path(__file__).resolve().parent.parent.parent / "shared" / "eval" / "squad-dev"
OUT = Path(__file__).resolve().parent / "out"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def setup(url: str, articles: int, calls: int, seed: int) -> tuple[str, list[str]]:
    documents = read_jsonl(EVAL / "documents.jsonl")[:articles]
    ids = {d["id"] for d in documents}
    questions = [q["query"] for q in read_jsonl(EVAL / "queries.jsonl") if q["gold"] and q["gold"][0]["doc_id"] in ids]
    name = f"async_bench_{articles}"
    with connect(url, autocommit=True) as conn:
        report = Ingestor(conn, collection=name).ingest(
            SourceDocument(external_id=d["id"], format=d.get("format") or "text", text=d["text"], title=d.get("title"))
            for d in documents)
    assert not report.errors, report.errors
    return name, random.Random(seed).sample(questions, calls)


async def measure(url: str, collection: str, queries: list[str], *, pool_size: int, rounds: int,
                  options: dict) -> dict:
    with connect(url, autocommit=True) as conn:
        sync = Pipeline(conn, collection=collection)
        async with AsyncConnectionPool(url, min_size=pool_size, max_size=pool_size) as pool:
            pipeline = AsyncPipeline(pool, pipeline=sync)  # the same models
            await asyncio.gather(*(pipeline.search(q, **options) for q in queries))  # warm: models, connections
            sync.search(queries[0], **options)
            sequential, concurrent, reference = [], [], []
            for _ in range(rounds):
                started = time.perf_counter()
                for query in queries:
                    await pipeline.search(query, **options)
                sequential.append(time.perf_counter() - started)
                started = time.perf_counter()
                await asyncio.gather(*(pipeline.search(q, **options) for q in queries))
                concurrent.append(time.perf_counter() - started)
                started = time.perf_counter()
                for query in queries:
                    sync.search(query, **options)
                reference.append(time.perf_counter() - started)
    seq, con, ref = (statistics.median(v) for v in (sequential, concurrent, reference))
    return {"options": options, "calls": len(queries), "pool": pool_size, "rounds": rounds,
            "sequential_s": round(seq, 3), "concurrent_s": round(con, 3), "sync_sequential_s": round(ref, 3),
            "ratio_concurrent_to_sequential": round(con / seq, 3),
            "all_rounds": {"sequential": [round(v, 3) for v in sequential],
                           "concurrent": [round(v, 3) for v in concurrent]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=Path("/tmp/wr-async"))
    parser.add_argument("--articles", type=int, default=24)
    parser.add_argument("--calls", type=int, default=16)
    parser.add_argument("--pool", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rerank", action="store_true", help="also measure with the cross-encoder")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()

    url = start_embedded(args.home)
    collection, queries = setup(url, args.articles, args.calls, args.seed)
    runs = [{"k": 5}] + ([{"k": 5, "rerank": True}] if args.rerank else [])
    results = [asyncio.run(measure(url, collection, queries, pool_size=args.pool, rounds=args.rounds, options=o))
               for o in runs]
    OUT.mkdir(exist_ok=True)
    (OUT / "async_concurrency.json").write_text(json.dumps(results, indent=2))
    for r in results:
        print(f"{r['options']}: {r['calls']} calls, pool {r['pool']}: sequential {r['sequential_s']} s, "
              f"concurrent {r['concurrent_s']} s, ratio {r['ratio_concurrent_to_sequential']} "
              f"(sync sequential {r['sync_sequential_s']} s)")


if __name__ == "__main__":
    main()
