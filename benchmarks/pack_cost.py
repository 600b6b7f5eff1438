"""What BM25 packs cost an incrementally grown collection: a full pack (windowrag.bm25_rebuild) against
a pack of the recent tier only (windowrag.bm25_pack_recent, migration 0021), and what each policy
costs a sentence, amortised over the collection's growth.

    python benchmarks/pack_cost.py --home /tmp/wr-sbs-1m/windowrag --passes 2

On a loaded, packed collection (e.g. the windowrag side of a benchmarks/side_by_side.py run; its
server must be stopped): times bm25_rebuild (committed: it leaves the collection as it was), then
bm25_pack_recent as if the last full pack had ended before the newest sentences holding a share
of 10%, 20%, ..., 50% of the others' postings (bm25_stats.packed_through set back in a
transaction that is rolled back after the call: the work is that of a real recent pack of that
size, which finds no rows and no earlier tier to drop). Then it replays store/bm25.py's rules
(pack_kind) over the growth of a collection from this size by --growth (rows written until a pack
is due, the pack's seconds interpolated from the timings: a full pack in proportion to the
collection's postings, a recent one from the measured shares, scaled likewise) against full packs only (the rule
before 0021), and prints the seconds of packs per sentence written. Not a test.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import query as q  # noqa: E402

from windowrag_pg.db.connection import connect  # noqa: E402
from windowrag_pg.db.embedded import start_embedded, stop_embedded  # noqa: E402
from windowrag_pg.store.bm25 import PACK_MIN_POSTINGS, pack_due, pack_kind  # noqa: E402

SHARES = (0.1, 0.2, 0.3, 0.4, 0.5)


def measure(conn, collection_id: int, passes: int) -> tuple[float, dict[float, float], int, float]:
    """Seconds of a full pack, of a recent pack by share, the collection's packed postings and its
    postings a sentence."""
    conn.execute("SET statement_timeout = 0")
    full = []
    for _ in range(passes):
        started = time.perf_counter()
        packed = conn.execute("SELECT windowrag.bm25_rebuild(%s)", [collection_id]).fetchone()[0]
        full.append(time.perf_counter() - started)
    per_sentence = packed / conn.execute("SELECT n_sentences FROM windowrag.bm25_stats WHERE collection_id = %s",
                                         [collection_id]).fetchone()[0]
    newest = conn.execute("SELECT id, length(tsv) FROM windowrag.sentences WHERE collection_id = %s ORDER BY id DESC",
                          [collection_id]).fetchall()
    recent = {share: [] for share in SHARES}
    for _ in range(passes):
        for share in SHARES:
            target, total, cutoff = packed * share / (1 + share), 0, None
            for sentence_id, postings in newest:
                total += postings
                if total > target:
                    break
                cutoff = sentence_id
            with conn.transaction(force_rollback=True):
                conn.execute("UPDATE windowrag.bm25_stats SET packed_through = %s WHERE collection_id = %s",
                             [cutoff - 1, collection_id])
                started = time.perf_counter()
                conn.execute("SELECT windowrag.bm25_pack_recent(%s)", [collection_id])
                recent[share].append(time.perf_counter() - started)
            q.log(f"recent tier of {share:.0%}: {recent[share][-1]:.1f} s")
    return statistics.median(full), {s: statistics.median(v) for s, v in recent.items()}, packed, per_sentence


def replay(packed0: int, full_seconds: float, recent_seconds: dict[float, float], growth: float,
           tiers: bool) -> tuple[float, int, int]:
    """Seconds of packs over the growth of the collection from packed0 postings by GROWTH, the
    number of full and of recent packs."""
    main, recent, pending, seconds, fulls, recents = packed0, 0, 0, 0.0, 0, 0
    step = max(PACK_MIN_POSTINGS, packed0 // 1000)
    written = 0
    while written < growth * packed0:
        pending += step
        written += step
        packed = main + recent
        due = pack_kind(pending, 0, packed, recent) if tiers else ("full" if pack_due(pending, 0, packed) else None)
        if due == "full":
            main, recent, pending = packed + pending, 0, 0
            seconds += full_seconds * main / packed0
            fulls += 1
        elif due == "recent":
            recent, pending = recent + pending, 0
            share = recent / main
            # measured at this collection's size: a tier of the same share of a larger first tier
            # holds proportionally more postings
            seconds += (float(np.interp(share, list(recent_seconds), list(recent_seconds.values())))
                        * max(1.0, share / max(SHARES)) * main / packed0)
            recents += 1
    return seconds, fulls, recents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--collection", default="side_by_side")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--growth", type=float, default=3.0, help="the collection grows to (1 + GROWTH) times its size")
    args = parser.parse_args()
    url = start_embedded(args.home)
    try:
        with connect(url, autocommit=True) as conn:  # migrated to head, as the library does
            collection_id = conn.execute("SELECT id FROM windowrag.collections WHERE name = %s",
                                         [args.collection]).fetchone()[0]
            load = q.uptime()
            full, recent, packed, per_sentence = measure(conn, collection_id, args.passes)
    finally:
        stop_embedded(args.home)
    lines = [f"load before: {load}", f"{packed:,} postings packed, {per_sentence:.1f} a sentence",
             f"full pack (bm25_rebuild): {full:.1f} s (median of {args.passes})",
             "recent pack (bm25_pack_recent), by the recent tier's share of the first: "
             + ", ".join(f"{s:.0%} {t:.1f} s" for s, t in recent.items())]
    for label, tiers in (("full packs only (before 0021)", False), ("full and recent packs (pack_kind)", True)):
        seconds, fulls, recents = replay(packed, full, recent, args.growth, tiers)
        sentences = args.growth * packed / per_sentence
        lines.append(f"{label}: growth x{1 + args.growth:g}: {fulls} full and {recents} recent packs, {seconds:,.0f} s, "
                     f"{seconds / sentences * 1000:.3f} ms a sentence written")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
