"""Ingestion throughput: end to end (windowrag_pg.ingest.Ingestor) versus bare embedding.

    python benchmarks/ingest.py [--documents /work/shared/eval/handbook/documents.jsonl]
                                [--home /tmp/wr-bench-ingest] [--batch-size 32] [--profile]
                                [--no-prototype]

1. Reads the documents (JSON lines) into memory (not timed).
2. Warms the embedder up (model load, first session run; not timed).
3. End to end: ``Ingestor.ingest`` into a fresh collection, with wall-clock timers wrapped
   around each stage (the functions ``windowrag_pg.ingest`` calls are wrapped in place,
   nothing is edited): parse/split (+ content hash, embedding texts), embed
   (``embed_documents``), token counting, database (``existing_hash`` + ``write_documents``).
4. Bare embedding: the same unit texts, ``embedder.embed_documents(texts, batch_size=32)`` in
   one call (the Ingestor calls it once per document with the same default batch size 32).
5. Prototype (unless --no-prototype): a pipelined ingest built from the same public functions:
   units of several small documents are embedded in one call (>= --chunk-units texts) and
   the database writes run in a second thread (its own connection) while the next chunk is
   embedded. Written into another fresh collection; its row count is checked.

The embedded server lives under --home (its own, not the default). Writes a markdown report
to benchmarks/out/ingest.md and the unit texts + bare vectors to benchmarks/out/units_handbook_every<N>.*
(reused by benchmarks/query.py). Not a test: numbers depend on the machine and its load.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

os.environ.setdefault("WINDOWRAG_STATEMENT_TIMEOUT_MS", "0")

import windowrag_pg.ingest as ingest_mod  # noqa: E402
from windowrag_pg.db.connection import connect  # noqa: E402
from windowrag_pg.db.embedded import start_embedded  # noqa: E402
from windowrag_pg.embed import get_embedder  # noqa: E402
from windowrag_pg.ingest import Ingestor, content_hash, embedding_texts, parse_source  # noqa: E402
from windowrag_pg.parse import ParseError  # noqa: E402
from windowrag_pg.sources import SourceDocument, iter_sources  # noqa: E402
from windowrag_pg.split.sentences import DEFAULT_MAX_UNIT_CHARS, split_units  # noqa: E402
from windowrag_pg.store.collections import ensure_collection  # noqa: E402
from windowrag_pg.store.writer import DocumentRecord, existing_hash, write_document  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
DEFAULT_DOCUMENTS = Path("/work/shared/eval/handbook/documents.jsonl")


def load_avg() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "n/a"


def fresh_collection(conn, name: str) -> None:
    row = conn.execute("SELECT id FROM windowrag.collections WHERE name = %s", [name]).fetchone()
    if row is not None:
        conn.execute(f'DROP INDEX IF EXISTS windowrag."sentences_embedding_hnsw_c{row[0]}"')
        conn.execute("DELETE FROM windowrag.collections WHERE id = %s", [row[0]])
    conn.execute("VACUUM ANALYZE windowrag.sentences, windowrag.bm25_postings, windowrag.bm25_terms")


class StageTimers:
    """Wrap the functions windowrag_pg.ingest calls and add up wall time per stage."""

    def __init__(self, embedder):
        self.seconds = {"parse/split": 0.0, "embed": 0.0, "token count": 0.0, "database": 0.0}
        self.embedder = embedder
        self._saved = {}

    def _wrap(self, owner, attr, stage):
        original = getattr(owner, attr)
        self._saved[(owner, attr)] = original
        seconds = self.seconds

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[stage] += time.perf_counter() - started

        setattr(owner, attr, timed)

    def __enter__(self):
        for name in ("content_hash", "parse_source", "split_units", "embedding_texts"):
            self._wrap(ingest_mod, name, "parse/split")
        for name in ("existing_hash", "write_documents"):
            self._wrap(ingest_mod, name, "database")
        self._wrap(self.embedder, "embed_documents", "embed")
        self._wrap(self.embedder, "count_tokens", "token count")
        return self

    def __exit__(self, *exc):
        for (owner, attr), original in self._saved.items():
            if owner is self.embedder:
                delattr(owner, attr)  # back to the class attribute
            else:
                setattr(owner, attr, original)


def usable(source: SourceDocument) -> bool:
    """Documents the Ingestor would refuse (empty text, no unit) are left out of every run."""
    try:
        return bool(split_units(parse_source(source)))
    except ParseError:
        return False


def unit_texts(sources: list[SourceDocument]) -> tuple[list[str], list[str], float]:
    """The texts the Ingestor embeds (contextual_headers=False: the unit text), and their doc ids."""
    started = time.perf_counter()
    texts, doc_ids = [], []
    for source in sources:
        try:
            parsed = parse_source(source)
        except ParseError:
            continue
        units = split_units(parsed)
        texts.extend(embedding_texts(parsed, units, title=source.title or parsed.title, contextual_headers=False))
        doc_ids.extend([source.external_id] * len(units))
    return texts, doc_ids, time.perf_counter() - started


def run_end_to_end(url, sources, embedder, name, profile: bool):
    conn = connect(url, autocommit=True)
    fresh_collection(conn, name)
    ingestor = Ingestor(conn, collection=name, embedder=embedder, contextual_headers=False)  # the texts planned above
    bar = tqdm(total=len(sources), desc="end to end", unit="doc")
    profiler = cProfile.Profile() if profile else None
    with StageTimers(embedder) as timers:
        started = time.perf_counter()
        if profiler:
            profiler.enable()
        report = ingestor.ingest(sources, on_document=lambda *_: bar.update(1))
        if profiler:
            profiler.disable()
        wall = time.perf_counter() - started
    bar.close()
    rows = conn.execute("SELECT count(*) FROM windowrag.sentences WHERE collection_id = %s",
                        [ingestor.collection.id]).fetchone()[0]
    conn.close()
    profile_text = None
    if profiler:
        buffer = io.StringIO()
        pstats.Stats(profiler, stream=buffer).sort_stats("cumulative").print_stats(30)
        profile_text = buffer.getvalue()
    return report, wall, dict(timers.seconds), rows, profile_text


def run_bare(embedder, texts, batch_size):
    bar = tqdm(total=len(texts), desc="bare embedding", unit="text")
    started = time.perf_counter()
    vectors = embedder.embed_documents(texts, batch_size=batch_size, progress=bar.update)
    wall = time.perf_counter() - started
    bar.close()
    return vectors, wall


def run_prototype(url, sources, embedder, name, chunk_units: int, batch_size: int):
    """Pipelined ingest: cross-document embedding batches + database writes in a second thread."""
    conn = connect(url, autocommit=True)
    fresh_collection(conn, name)
    collection = ensure_collection(conn, name, embedding_model=embedder.model_id, dimension=embedder.dimension)
    writer_conn = connect(url, autocommit=True)
    work: queue.Queue = queue.Queue(maxsize=2)
    seconds = {"parse/split": 0.0, "embed": 0.0, "token count": 0.0, "database (writer thread)": 0.0}
    errors: list[BaseException] = []
    written = [0]

    def writer():
        while True:
            item = work.get()
            if item is None:
                return
            started = time.perf_counter()
            try:
                for record, parsed, units, vectors, tokens in item:
                    write_document(writer_conn, collection, record, parsed, units, vectors, tokens)
                    written[0] += len(units)
            except BaseException as exc:  # surfaced after join
                errors.append(exc)
            seconds["database (writer thread)"] += time.perf_counter() - started

    thread = threading.Thread(target=writer, daemon=True)
    bar = tqdm(total=len(sources), desc="prototype", unit="doc")
    started = time.perf_counter()
    thread.start()
    pending: list = []
    pending_units = 0

    def flush():
        nonlocal pending, pending_units
        if not pending:
            return
        t0 = time.perf_counter()
        texts = [t for _, _, _, doc_texts in pending for t in doc_texts]
        vectors = embedder.embed_documents(texts, batch_size=batch_size)
        t1 = time.perf_counter()
        tokens_all = embedder.count_tokens([u.text for _, _, units, _ in pending for u in units])
        t2 = time.perf_counter()
        seconds["embed"] += t1 - t0
        seconds["token count"] += t2 - t1
        batch, offset = [], 0
        for record, parsed, units, _ in pending:
            n = len(units)
            batch.append((record, parsed, units, vectors[offset:offset + n], tokens_all[offset:offset + n]))
            offset += n
        work.put(batch)
        bar.update(len(pending))
        pending, pending_units = [], 0

    for source in sources:
        t0 = time.perf_counter()
        digest = content_hash(source, units=[DEFAULT_MAX_UNIT_CHARS, None])  # as the Ingestor hashes it
        if existing_hash(conn, collection, source.external_id) == digest:
            continue
        parsed = parse_source(source)
        units = split_units(parsed)
        texts = embedding_texts(parsed, units, title=source.title or parsed.title, contextual_headers=False)
        record = DocumentRecord(source.external_id, source.title or parsed.title, source.source, source.format,
                                source.metadata, digest)
        seconds["parse/split"] += time.perf_counter() - t0
        if not units:
            continue
        pending.append((record, parsed, units, texts))
        pending_units += len(units)
        if pending_units >= chunk_units:
            flush()
    flush()
    work.put(None)
    t_wait = time.perf_counter()
    thread.join()
    tail = time.perf_counter() - t_wait
    wall = time.perf_counter() - started
    bar.close()
    if errors:
        raise errors[0]
    rows = conn.execute("SELECT count(*) FROM windowrag.sentences WHERE collection_id = %s",
                        [collection.id]).fetchone()[0]
    conn.close()
    writer_conn.close()
    return wall, seconds, tail, rows, written[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=Path, default=DEFAULT_DOCUMENTS)
    parser.add_argument("--home", type=Path, default=Path("/tmp/wr-bench-ingest"),
                        help="embedded server home of this benchmark (never the default one)")
    parser.add_argument("--every", type=int, default=1,
                        help="use every N-th document only (a systematic sample, for a shorter run)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--chunk-units", type=int, default=512, help="prototype: texts per embedding call")
    parser.add_argument("--profile", action="store_true", help="cProfile the end-to-end run (adds overhead)")
    parser.add_argument("--no-prototype", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT / "ingest.md")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)

    sources = [s for s in iter_sources([args.documents]) if isinstance(s, SourceDocument)]
    sources = sources[::args.every]
    skipped = [s.external_id for s in sources if not usable(s)]
    sources = [s for s in sources if s.external_id not in set(skipped)]
    url = start_embedded(args.home)
    embedder = get_embedder()
    embedder.embed_documents(["warm up the session"] * 64, batch_size=args.batch_size)
    texts, doc_ids, split_seconds = unit_texts(sources)
    print(f"{len(sources)} documents, {len(texts)} units ({len(set(texts))} distinct texts); "
          f"parse+split alone {split_seconds:.1f} s", file=sys.stderr)

    loads = {"start": load_avg()}
    report, e2e_wall, stages, rows, profile_text = run_end_to_end(
        url, sources, embedder, "bench_ingest_e2e", args.profile)
    loads["after end to end"] = load_avg()
    vectors, bare_wall = run_bare(embedder, texts, args.batch_size)
    loads["after bare"] = load_avg()
    np.save(OUT / f"units_handbook_every{args.every}.npy", vectors)
    with open(OUT / f"units_handbook_every{args.every}.jsonl", "w") as fh:
        for text, doc_id in zip(texts, doc_ids):
            fh.write(json.dumps({"doc": doc_id, "text": text}) + "\n")
    proto = None
    if not args.no_prototype:
        proto = run_prototype(url, sources, embedder, "bench_ingest_proto", args.chunk_units, args.batch_size)
        loads["after prototype"] = load_avg()

    n = report.sentences
    e2e_rate = n / e2e_wall
    bare_rate = len(texts) / bare_wall
    lines = [
        "## Ingestion throughput (handbook)",
        "",
        f"- input: `{args.documents}`, every {args.every}-th document: {len(sources)} documents, {len(texts)} units "
        f"({len(set(texts))} distinct texts), {rows} sentence rows stored end to end; "
        f"{len(skipped)} documents left out (empty text or no unit: the Ingestor refuses them)",
        f"- embedder: `{embedder.model_id}`, {embedder.threads} threads, batch size {args.batch_size}",
        f"- machine: {os.cpu_count()} cores; load: " + "; ".join(f"{k}: `{v}`" for k, v in loads.items()),
        f"- cProfile on during end to end: {args.profile}",
        "",
        "| run | seconds | units/s | vs bare embedding |",
        "|---|---:|---:|---:|",
        f"| bare `embed_documents` (one call, all {len(texts)} texts) | {bare_wall:.1f} | {bare_rate:.1f} | 100% |",
        f"| end to end `Ingestor.ingest` | {e2e_wall:.1f} | {e2e_rate:.1f} | {100 * e2e_rate / bare_rate:.0f}% |",
    ]
    if proto:
        p_wall, p_seconds, p_tail, p_rows, p_written = proto
        lines.append(f"| prototype: cross-document batches of >= {args.chunk_units} texts + writer thread "
                     f"| {p_wall:.1f} | {p_rows / p_wall:.1f} | {100 * p_rows / p_wall / bare_rate:.0f}% |")
    lines += ["", "Share of end-to-end wall time per stage (`Ingestor.ingest`):", "",
              "| stage | seconds | share |", "|---|---:|---:|"]
    for stage, sec in stages.items():
        lines.append(f"| {stage} | {sec:.1f} | {100 * sec / e2e_wall:.1f}% |")
    other = e2e_wall - sum(stages.values())
    lines.append(f"| other (loop, reports) | {other:.1f} | {100 * other / e2e_wall:.1f}% |")
    if proto:
        lines += ["", "Prototype, time per stage (embedding and parsing on the main thread; database in "
                  "the writer thread, overlapping):", "", "| stage | seconds |", "|---|---:|"]
        for stage, sec in p_seconds.items():
            lines.append(f"| {stage} | {sec:.1f} |")
        lines.append(f"| waiting for the writer at the end | {p_tail:.1f} |")
    if profile_text:
        lines += ["", "cProfile of the end-to-end run (top 30 by cumulative time):", "", "```",
                  profile_text.strip(), "```"]
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
