"""What BM25 posting rows cost a query between two packs (migration 0020), on a loaded collection.

    python benchmarks/pending_postings.py --home /tmp/wr-sbs-1m/windowrag --shares 0.1,0.2

An incrementally grown collection keeps the postings of the sentences written since its last
pack as rows (bm25_postings) beside the packed blocks, until they reach PACK_SHARE of the packed
ones. This script takes a collection that is fully packed (e.g. the windowrag side of a
benchmarks/side_by_side.py run, whose home it reuses; its server must be stopped) and, in copies
of its database (CREATE DATABASE ... TEMPLATE), turns the postings of its newest sentences into
rows, as many as SHARE of the rest (as just before a pack): the older sentences are packed as
windowrag.bm25_rebuild packs them, the newer ones' postings written as the insert trigger writes
them. With --recent, one more copy whose rows at the largest share are then packed into a recent
tier (windowrag.bm25_pack_recent, migration 0021). Unless --no-previous, one more copy at the largest share runs 0019's functions (the frozen copy
migrations/versions/0020_functions.sql: a cut list read at its full length from both the blocks
and the rows). Then, on 200 SQuAD questions:
1. BM25 top 20 against exhaustive scoring (every posting of every query term; a result counts
   when its exact score reaches the 20th exact score, so copies' ties count), per database;
2. bm25_search (n 20) and search_windows (hybrid + windows, as side_by_side.py) query by query on
   every database in turn, the order rotating; paired medians against the packed database and
   the previous functions, with 95% bootstrap intervals.
The report goes to benchmarks/out/pending_postings_<sentences>.md. Not a test: the copies are
dropped at the end unless --keep.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
from psycopg import sql
from pgvector.psycopg import register_vector

sys.path.insert(0, str(Path(__file__).resolve().parent))
import query as q  # noqa: E402  benchmarks/query.py: SQuAD questions and their cached vectors

from windowrag_pg.db.embedded import start_embedded, stop_embedded  # noqa: E402
from windowrag_pg.db.sqlfiles import load_frozen_sql  # noqa: E402
from windowrag_pg.embed import get_embedder  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"

# The newest sentences whose postings make SHARE of the others': rows; the others: packed. The
# blocks are windowrag.bm25_rebuild's (its block query, restricted to the older sentences), the
# rows the insert trigger's; packed_df and the counters as the pack and the trigger leave them.
UNPACK = """
DO $$
DECLARE
    cid integer := (SELECT id FROM windowrag.collections WHERE name = current_setting('pending.collection'));
    share float8 := current_setting('pending.share')::float8;
    avg_length float8;
    total bigint;
    cutoff bigint;
BEGIN
    SELECT sum(length(tsv)) INTO total FROM windowrag.sentences WHERE collection_id = cid;
    SELECT min(x.id) INTO cutoff
    FROM (SELECT id, sum(length(tsv)) OVER (ORDER BY id DESC) AS newer
          FROM windowrag.sentences WHERE collection_id = cid) x
    WHERE x.newer <= total * share / (1 + share);
    PERFORM set_config('work_mem', '256MB', true);
    DELETE FROM windowrag.bm25_postings WHERE collection_id = cid;
    DELETE FROM windowrag.bm25_blocks WHERE collection_id = cid;
    SELECT greatest(s.total_length::float8 / nullif(s.n_sentences, 0), 1.0) INTO avg_length
    FROM windowrag.bm25_stats s WHERE s.collection_id = cid;
    CREATE TEMP TABLE packed AS
    SELECT p.lexeme, (p.rn - 1) / 128 AS block, max(p.impact) AS max_impact,
           array_agg(p.sentence_id ORDER BY p.rn) AS sentence_ids, array_agg(p.tf ORDER BY p.rn) AS tfs,
           array_agg(p.bm25_length ORDER BY p.rn) AS lengths
    FROM (SELECT u.lexeme COLLATE "C" AS lexeme, x.id AS sentence_id, cardinality(u.positions)::smallint AS tf,
                 x.bm25_length, w.impact,
                 row_number() OVER (PARTITION BY u.lexeme COLLATE "C" ORDER BY w.impact DESC, x.id) AS rn
          FROM windowrag.sentences x
          CROSS JOIN LATERAL unnest(x.tsv) u
          CROSS JOIN LATERAL (SELECT windowrag.bm25_term_weight(cardinality(u.positions), x.bm25_length,
                                                                avg_length)::real AS impact) w
          WHERE x.collection_id = cid AND x.id < cutoff) p
    GROUP BY p.lexeme, (p.rn - 1) / 128;
    INSERT INTO windowrag.bm25_blocks (collection_id, lexeme, block, max_impact, sentence_ids, tfs, lengths)
    SELECT cid, t.lexeme, t.block, t.max_impact, t.sentence_ids, t.tfs, t.lengths FROM pg_temp.packed t;
    INSERT INTO windowrag.bm25_postings (collection_id, lexeme, sentence_id, tf, doc_length, impact)
    SELECT cid, u.lexeme, n.id, cardinality(u.positions), n.bm25_length,
           windowrag.bm25_term_weight(cardinality(u.positions), n.bm25_length, avg_length)
    FROM windowrag.sentences n, unnest(n.tsv) u WHERE n.collection_id = cid AND n.id >= cutoff;
    UPDATE windowrag.bm25_terms t SET packed_df = 0, recent_df = 0 WHERE t.collection_id = cid;
    UPDATE windowrag.bm25_terms t SET packed_df = x.n
    FROM (SELECT b.lexeme, sum(cardinality(b.sentence_ids)) AS n FROM pg_temp.packed b GROUP BY 1) x
    WHERE t.collection_id = cid AND t.lexeme = x.lexeme;
    UPDATE windowrag.bm25_stats s
    SET packed_postings = (SELECT sum(cardinality(b.sentence_ids)) FROM pg_temp.packed b),
        pending_postings = (SELECT count(*) FROM windowrag.bm25_postings p WHERE p.collection_id = cid),
        stale_postings = 0, recent_postings = 0, packed_through = cutoff - 1
    WHERE s.collection_id = cid;
    DROP TABLE pg_temp.packed;
END $$
"""
BM25 = "SELECT sentence_id, score FROM windowrag.bm25_search(%(c)s, %(q)s, 20)"
EXHAUSTIVE = "SELECT sentence_id, score FROM windowrag.bm25_search(%(c)s, %(q)s, 20, per_term_limit => 2000000000)"
HYBRID = "SELECT * FROM windowrag.search_windows(%(c)s, %(q)s, %(e)s, k => 5, window_size => 3)"


def database_url(url: str, name: str) -> str:
    return psycopg.conninfo.make_conninfo(url, dbname=name)


def make_copies(url: str, source: str, collection: str, shares: list[float], previous: bool,
                recent: bool) -> dict[str, tuple]:
    """label -> (database, share, previous functions); the packed source itself included."""
    copies = {"packed": (source, 0.0, False)}
    for share in shares:
        copies[f"rows {share:.0%}"] = (f"pending_{round(share * 100)}", share, False)
    if previous:
        copies[f"rows {max(shares):.0%}, 0019's functions"] = (f"pending_{round(max(shares) * 100)}_0019", max(shares), True)
    if recent:
        copies[f"recent tier {max(shares):.0%}"] = (f"recent_{round(max(shares) * 100)}", max(shares), "recent")
    with psycopg.connect(database_url(url, "postgres"), autocommit=True) as conn:
        existing = {r[0] for r in conn.execute("SELECT datname FROM pg_database")}
        for label, (database, share, _) in copies.items():
            if database != source and database not in existing:
                started = time.perf_counter()
                conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(database), sql.Identifier(source)))
                q.log(f"{label}: copied in {time.perf_counter() - started:.1f} s")
    for label, (database, share, old) in copies.items():
        if database == source:
            continue
        with psycopg.connect(database_url(url, database), autocommit=True) as conn:
            if conn.execute("SELECT sum(pending_postings) FROM windowrag.bm25_stats").fetchone()[0] == 0:
                started = time.perf_counter()
                conn.execute("SELECT set_config('pending.collection', %s, false), set_config('pending.share', %s, false)",
                             [collection, str(share)])
                conn.execute(UNPACK)
                conn.execute("VACUUM ANALYZE windowrag.bm25_postings")
                conn.execute("VACUUM ANALYZE windowrag.bm25_blocks")
                q.log(f"{label}: unpacked in {time.perf_counter() - started:.1f} s")
            if old == "recent":  # the same rows packed into a recent tier (migration 0021)
                if conn.execute("SELECT sum(recent_postings) FROM windowrag.bm25_stats").fetchone()[0] == 0:
                    started = time.perf_counter()
                    conn.execute("SELECT windowrag.bm25_pack_recent(id) FROM windowrag.collections WHERE name = %s",
                                 [collection])
                    conn.execute("VACUUM ANALYZE windowrag.bm25_blocks")
                    q.log(f"{label}: recent tier packed in {time.perf_counter() - started:.1f} s")
            elif old:
                conn.execute(load_frozen_sql("0020_functions"))
    return copies


def exhaustive_recall(conns: dict, collection: str, queries: list[str]) -> dict[str, float]:
    """Share of each database's BM25 top 20 whose exact score reaches the exhaustive 20th."""
    reference = next(iter(conns.values()))
    shares = {label: [] for label in conns}
    for text in queries:
        exact = reference.execute(EXHAUSTIVE, {"c": collection, "q": text}).fetchall()
        if not exact:
            continue
        floor, ids = exact[-1][1], {sid for sid, _ in exact}
        for label, conn in conns.items():
            got = conn.execute(BM25, {"c": collection, "q": text}).fetchall()
            shares[label].append(np.mean([sid in ids or score >= floor - 1e-9 for sid, score in got]) if got else 0.0)
    return {label: float(np.mean(values)) for label, values in shares.items()}


def interleaved(conns: dict, statement: str, collection: str, queries: list[str], qvecs: np.ndarray,
                passes: int, warmup: int) -> dict[str, list[float]]:
    labels = list(conns)
    times = {label: [] for label in labels}
    for _ in range(passes):
        for i, (text, vec) in enumerate(zip(queries, qvecs)):
            for label in labels[i % len(labels):] + labels[:i % len(labels)]:
                started = time.perf_counter()
                conns[label].execute(statement, {"c": collection, "q": text, "e": vec}).fetchall()
                if i >= warmup:
                    times[label].append((time.perf_counter() - started) * 1000)
    return times


def paired(a: list[float], b: list[float]) -> str:
    diff = np.subtract(a, b)
    medians = [np.median(random.choices(list(diff), k=len(diff))) for _ in range(2000)]
    return f"{np.median(diff):+.2f} ({np.percentile(medians, 2.5):+.2f}, {np.percentile(medians, 97.5):+.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="a windowrag home holding a packed collection")
    parser.add_argument("--collection", default="side_by_side")
    parser.add_argument("--shares", default="0.1,0.2")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-previous", dest="previous", action="store_false")
    parser.add_argument("--recent", action="store_true", help="one more copy: the rows at the largest share packed "
                        "into a recent tier (bm25_pack_recent)")
    parser.add_argument("--keep", action="store_true", help="keep the copies")
    args = parser.parse_args()
    random.seed(args.seed)
    shares = [float(s) for s in args.shares.split(",")]
    queries, qvecs = q.load_queries(get_embedder(), args.queries + args.warmup, args.seed)
    url = start_embedded(args.home)
    source = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    copies, conns = {}, {}
    try:
        copies = make_copies(url, source, args.collection, shares, args.previous, args.recent)
        for label, (database, *_) in copies.items():
            conns[label] = psycopg.connect(database_url(url, database), autocommit=True, prepare_threshold=None)
            register_vector(conns[label])
        counts = {label: conn.execute("SELECT s.pending_postings, s.packed_postings, s.n_sentences FROM "
                                      "windowrag.bm25_stats s JOIN windowrag.collections c ON c.id = s.collection_id "
                                      "WHERE c.name = %s", [args.collection]).fetchone() for label, conn in conns.items()}
        sentences = counts["packed"][2]
        recall = exhaustive_recall(conns, args.collection, queries[args.warmup:])
        loads = [q.uptime()]
        timings = {name: interleaved(conns, statement, args.collection, queries, qvecs, args.passes, args.warmup)
                   for name, statement in (("bm25_search", BM25), ("search_windows", HYBRID))}
        loads.append(q.uptime())
    finally:
        for conn in conns.values():
            conn.close()
        if not args.keep:
            with psycopg.connect(database_url(url, "postgres"), autocommit=True) as conn:
                for database, *_ in copies.values():
                    if database != source:
                        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(database)))
        stop_embedded(args.home)

    labels = list(copies)
    previous = [label for label in labels if "0019" in label]
    lines = [f"# BM25 posting rows between packs: {sentences:,} sentences", "",
             f"`python benchmarks/pending_postings.py {' '.join(sys.argv[1:])}`; "
             f"{args.queries} SQuAD questions after {args.warmup} warm-up, {args.passes} passes, every "
             f"database in turn per question (order rotating), prepare=False; load {loads[0]} / {loads[-1]}.", "",
             "| database | postings as rows | packed | BM25 top 20 against exhaustive |", "|---|---:|---:|---:|"]
    lines += [f"| {label} | {counts[label][0]:,} | {counts[label][1]:,} | {recall[label]:.3f} |" for label in labels]
    for name, times in timings.items():
        header, rule = "| database | p50 | p95 | − packed |", "|---|---:|---:|---:|"
        if previous:
            header, rule = header + f" − {previous[0]} |", rule + "---:|"
        lines += ["", f"### {name}: ms, and paired median differences (95% bootstrap interval)", "", header, rule]
        for label in labels:
            row = (f"| {label} | {np.percentile(times[label], 50):.2f} | {np.percentile(times[label], 95):.2f} | "
                   f"{paired(times[label], times['packed']) if label != 'packed' else ''} |")
            if previous:
                row += f" {paired(times[label], times[previous[0]]) if label != previous[0] else ''} |"
            lines.append(row)
    report = OUT / f"pending_postings_{sentences}.md"
    OUT.mkdir(exist_ok=True)
    report.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    q.log(f"report: {report}")


if __name__ == "__main__":
    main()
