"""Ranking agreement of windowrag.bm25_search with exhaustive BM25 (every posting scored).

    python benchmarks/bm25_agreement.py --home /tmp/wr-bench --collections bench_100000 bench_1000000

Uses the collections built by benchmarks/query.py. Prints overlap@50 of sentence ids and the
share of ranks whose scores agree (identical copies of a sentence score the same).
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
import psycopg

from windowrag_pg.db.embedded import start_embedded

EXHAUSTIVE = """
WITH st AS (SELECT n_sentences::float8 AS n, total_length::float8 / n_sentences AS avgdl
            FROM windowrag.bm25_stats WHERE collection_id = %(c)s),
q AS (SELECT t.lexeme, ln(1 + (st.n - t.df + 0.5) / (t.df + 0.5)) AS idf
      FROM windowrag.bm25_terms t, st
      WHERE t.collection_id = %(c)s AND t.lexeme = ANY (windowrag.query_lexemes('english', %(q)s)))
SELECT p.sentence_id, round(sum(q.idf * windowrag.bm25_term_weight(p.tf, p.doc_length, st.avgdl))::numeric, 9)::float8
FROM q JOIN windowrag.bm25_postings p ON p.collection_id = %(c)s AND p.lexeme = q.lexeme, st
GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 50
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", default="/tmp/wr-bench")
    parser.add_argument("--collections", nargs="+", default=["bench_100000", "bench_1000000"])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--eval-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "eval"))
    args = parser.parse_args()
    questions = [json.loads(line)["query"] for line in open(Path(args.eval_dir) / "squad-dev" / "queries.jsonl")]
    random.Random(3).shuffle(questions)
    with psycopg.connect(start_embedded(Path(args.home)), autocommit=True) as conn:
        for name in args.collections:
            cid = conn.execute("SELECT id FROM windowrag.collections WHERE name = %s", [name]).fetchone()[0]
            overlap, agreement = [], []
            for question in questions[: args.queries]:
                exact = conn.execute(EXHAUSTIVE, {"c": cid, "q": question}, prepare=False).fetchall()
                got = conn.execute("SELECT sentence_id, score FROM windowrag.bm25_search(%s, %s, 50)",
                                   [name, question], prepare=False).fetchall()
                overlap.append(len({r[0] for r in exact} & {r[0] for r in got}) / max(1, len(exact)))
                agreement.append(np.mean([abs(a[1] - b[1]) < 1e-6 for a, b in zip(exact, got)]) if exact else 1.0)
            print(f"{name}: overlap@50 {np.mean(overlap):.3f}, score agreement@50 {np.mean(agreement):.3f}")


if __name__ == "__main__":
    main()
