"""What deleting a document costs with the BM25 delete trigger of head against 0019's (migration 0020
also keeps bm25_terms.packed_df there), paired, on a loaded collection.

    python benchmarks/delete_trigger_ab.py --home /tmp/wr-sbs-0019/windowrag --documents 300

Copies the home's database (CREATE DATABASE ... TEMPLATE; its server must be stopped), installs
0019's functions in the copy (migrations/versions/0020_functions.sql), then deletes each of the
newest --documents documents in both databases, one after the other (the order alternating),
each in a transaction rolled back, and prints the medians and the paired median difference with a
95% bootstrap interval. Not a test.
"""
from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import numpy as np
import psycopg
from psycopg import sql

from windowrag_pg.db.embedded import start_embedded, stop_embedded
from windowrag_pg.db.sqlfiles import load_frozen_sql

COPY = "delete_trigger_0019"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--documents", type=int, default=300)
    args = parser.parse_args()
    url = start_embedded(args.home)
    admin_url = psycopg.conninfo.make_conninfo(url, dbname="postgres")
    try:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(COPY)))
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(COPY), sql.Identifier(psycopg.conninfo.conninfo_to_dict(url)["dbname"])))
        with psycopg.connect(url, autocommit=True) as head, \
                psycopg.connect(psycopg.conninfo.make_conninfo(url, dbname=COPY), autocommit=True) as previous:
            previous.execute(load_frozen_sql("0020_functions"))
            conns = {"head": head, "0019": previous}
            documents = [r[0] for r in head.execute("SELECT id FROM windowrag.documents ORDER BY id DESC LIMIT %s",
                                                    [args.documents])]
            sentences = head.execute("SELECT count(*) FROM windowrag.sentences WHERE document_id = ANY (%s)",
                                     [documents]).fetchone()[0]
            times = {label: [] for label in conns}
            for i, document in enumerate(documents):
                for label in (["head", "0019"] if i % 2 else ["0019", "head"]):
                    with conns[label].transaction(force_rollback=True):
                        started = time.perf_counter()
                        conns[label].execute("DELETE FROM windowrag.documents WHERE id = %s", [document])
                        times[label].append((time.perf_counter() - started) * 1000)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(COPY)))
        stop_embedded(args.home)
    print(f"{len(documents)} documents, {sentences / len(documents):.0f} sentences each on average")
    for label, values in times.items():
        print(f"{label}: p50 {np.percentile(values, 50):.2f} ms, p95 {np.percentile(values, 95):.2f} ms")
    diff = np.subtract(times["head"], times["0019"])
    medians = [np.median(random.choices(list(diff), k=len(diff))) for _ in range(2000)]
    print(f"head - 0019: median {np.median(diff):+.2f} ms ({np.percentile(medians, 2.5):+.2f}, "
          f"{np.percentile(medians, 97.5):+.2f})")


if __name__ == "__main__":
    main()
