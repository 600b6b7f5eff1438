"""Would MaxScore-style pruning make windowrag.bm25_search cheaper? An estimate from the postings.

    python benchmarks/bm25_pruning_estimate.py --home /tmp/wr-side-by-side --collection side_by_side

For each SQuAD question (the cached sample of benchmarks/query.py) every posting of its terms is
read from windowrag.bm25_blocks and weighed exactly (k1 1.2, b 0.75), giving the exact top-n
threshold theta. MaxScore splits the terms, by ascending upper bound (the best weight in the
list), into non-essential ones (their upper bounds sum below theta: a sentence matching only
them cannot reach the top n) and essential ones (read whole). A sentence of an essential list can
still need its non-essential terms' weights, unless its essential sum plus their upper bounds
stays below theta; bm25_search would read those from the sentence's tsvector, which costs
about as much as 12 postings (its rescore_cost). Prints the postings read today (whole lists)
against essential postings + 12 × sentences to re-score. Not timed: counts only.
"""
from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import query as bench  # noqa: E402  (benchmarks/query.py: the cached question sample)

from windowrag_pg.db.embedded import start_embedded  # noqa: E402

K1, B, RESCORE_COST = 1.2, 0.75, 12


def term_postings(conn, cid: int, lexeme: str, n_sentences: int, avg_length: float):
    """(sentence ids, exact weights) of one term, or None when the collection lacks it."""
    row = conn.execute("SELECT df FROM windowrag.bm25_terms WHERE collection_id = %s AND lexeme = %s",
                       (cid, lexeme)).fetchone()
    if row is None:
        return None
    idf = np.log(1 + (n_sentences - row[0] + 0.5) / (row[0] + 0.5))
    blocks = conn.execute("SELECT sentence_ids, tfs, lengths FROM windowrag.bm25_blocks "
                          "WHERE collection_id = %s AND lexeme = %s ORDER BY block", (cid, lexeme)).fetchall()
    ids = np.concatenate([np.asarray(b[0]) for b in blocks])
    tf = np.concatenate([np.asarray(b[1]) for b in blocks]).astype(float)
    length = np.concatenate([np.asarray(b[2]) for b in blocks]).astype(float)
    return ids, idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg_length))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--collection", default="side_by_side")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--n", type=int, default=50)
    args = parser.parse_args()
    queries, _ = bench.load_queries(None, 220, 7)
    rows = []
    with psycopg.connect(start_embedded(args.home)) as conn:
        cid = conn.execute("SELECT id FROM windowrag.collections WHERE name = %s", (args.collection,)).fetchone()[0]
        n_sentences, total = conn.execute("SELECT n_sentences, total_length FROM windowrag.bm25_stats "
                                          "WHERE collection_id = %s", (cid,)).fetchone()
        for text in queries[: args.queries]:
            lexemes = conn.execute("SELECT windowrag.query_lexemes('english', %s)", (text,)).fetchone()[0]
            terms = [t for t in (term_postings(conn, cid, lx, n_sentences, total / n_sentences) for lx in lexemes) if t]
            if not terms:
                continue
            exact = collections.Counter()
            for ids, weights in terms:
                for sid, w in zip(ids.tolist(), weights.tolist()):
                    exact[sid] += w
            theta = sorted(exact.values(), reverse=True)[min(args.n, len(exact)) - 1]
            bound, essential = 0.0, []
            for ids, weights in sorted(terms, key=lambda t: t[1].max()):
                if not essential and bound + weights.max() < theta:
                    bound += weights.max()
                else:
                    essential.append((ids, weights))
            partial = collections.Counter()
            for ids, weights in essential:
                for sid, w in zip(ids.tolist(), weights.tolist()):
                    partial[sid] += w
            rescore = sum(1 for s in partial.values() if s + bound >= theta) if bound > 0 else 0
            rows.append((sum(len(t[0]) for t in terms), sum(len(t[0]) for t in essential), rescore))
    r = np.asarray(rows, dtype=float)
    pruned = r[:, 1] + RESCORE_COST * r[:, 2]
    print(f"{len(r)} questions, {args.collection}, n = {args.n}")
    print(f"postings read today (whole lists): median {np.median(r[:, 0]):,.0f}, mean {r[:, 0].mean():,.0f}")
    print(f"MaxScore: essential postings median {np.median(r[:, 1]):,.0f}; sentences to re-score median "
          f"{np.median(r[:, 2]):,.0f}; cost in postings median {np.median(pruned):,.0f}, mean {pruned.mean():,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
