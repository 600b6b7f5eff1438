"""Where an incremental document's time goes: pg_stat_statements (track = all, so the statements of
triggers are counted too) over documents of a loaded collection ingested again one by one under
new external ids, with random unit vectors (embedding excluded from the seconds).

    python benchmarks/incremental_profile.py --home /tmp/wr-sbs-1m-inc/windowrag

Takes the windowrag home of a benchmarks/side_by_side.py run (its server stopped), preloads
pg_stat_statements for the run and resets the setting after. The documents stay in the
collection: run it on a scratch copy. Random vectors are not the data's: the HNSW share is
indicative. Not a test; prints its table.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from windowrag_pg.db.connection import connect  # noqa: E402
from windowrag_pg.db.embedded import start_embedded, stop_embedded  # noqa: E402
from windowrag_pg.embed import get_embedder  # noqa: E402
from windowrag_pg.embed.base import Embedder  # noqa: E402
from windowrag_pg.ingest import Ingestor  # noqa: E402
from windowrag_pg.sources import SourceDocument  # noqa: E402

STATEMENTS = """SELECT calls, total_exec_time, toplevel, left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
FROM pg_stat_statements WHERE query NOT LIKE '%%pg_stat_statements%%' ORDER BY total_exec_time DESC LIMIT 25"""


class RandomEmbedder(Embedder):
    """Random unit vectors under the default model's id (so the collection accepts them); the
    default model's tokenizer counts the tokens."""

    def __init__(self) -> None:
        self._real = get_embedder()
        self.model_id = self._real.model_id
        self.query_instruction = None
        self._rng = np.random.default_rng(0)

    @property
    def dimension(self) -> int:
        return self._real.dimension

    def _embed(self, texts, *, batch_size, progress):
        v = self._rng.standard_normal((len(texts), self.dimension)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def count_tokens(self, texts):
        return self._real.count_tokens(texts)


def restart_with_statement_stats(home: Path, on: bool) -> str:
    url = start_embedded(home)
    with psycopg.connect(url, autocommit=True) as conn:
        if on:
            conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            conn.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
        else:
            conn.execute("ALTER SYSTEM RESET shared_preload_libraries")
            conn.execute("ALTER SYSTEM RESET pg_stat_statements.track")
    stop_embedded(home, timeout=120)
    return start_embedded(home) if on else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="the windowrag home of a side-by-side run")
    parser.add_argument("--collection", default="side_by_side")
    parser.add_argument("--documents", type=int, default=60, help="documents measured (after 10 warm-up)")
    args = parser.parse_args()
    url = restart_with_statement_stats(args.home, True)
    try:
        conn = connect(url, autocommit=True)
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        rows = conn.execute("SELECT d.external_id, d.text FROM windowrag.documents d JOIN windowrag.collections c "
                            "ON c.id = d.collection_id WHERE c.name = %s ORDER BY d.id DESC LIMIT %s",
                            [args.collection, args.documents + 10]).fetchall()
        if len(rows) < args.documents + 10:
            raise SystemExit(f"collection {args.collection!r} has {len(rows)} documents: --documents {args.documents} "
                             f"needs {args.documents + 10} (10 warm-up)")
        documents = [SourceDocument(external_id=f"profile{i}-{external_id}", format="text", text=text)
                     for i, (external_id, text) in enumerate(rows)]
        ingestor = Ingestor(conn, collection=args.collection, embedder=RandomEmbedder(), bulk=False)
        for document in documents[:10]:
            ingestor.ingest([document])
        conn.execute("SELECT pg_stat_statements_reset()")
        seconds = sentences = 0.0
        for document in documents[10:]:
            report = ingestor.ingest([document])
            seconds += report.seconds - report.embed_seconds
            sentences += report.sentences
        n = len(documents) - 10
        stats = conn.execute(STATEMENTS).fetchall()
        conn.close()
    finally:
        stop_embedded(args.home, timeout=120)
        restart_with_statement_stats(args.home, False)
    print(f"{n} documents, {sentences:.0f} sentences: {1000 * seconds / n:.1f} ms a document (embedding excluded); "
          f"top-level statements {sum(s[1] for s in stats if s[2]) / n:.1f} ms")
    print("| ms a document | calls a document | top level | statement |\n|---:|---:|---|---|")
    for calls, total, toplevel, query in stats:
        print(f"| {total / n:.2f} | {calls / n:.1f} | {'yes' if toplevel else ''} | `{query}` |")


if __name__ == "__main__":
    main()
