"""Memory (issue 12, item 7): a line of megabytes without a sentence break is split, counted and
embedded with memory that does not grow with it (≤ 200 MiB above the idle process), measured as
peak RSS (resource.getrusage) in a fresh subprocess."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

LIMIT_MIB = 200

PREAMBLE = textwrap.dedent("""
    import json, random, resource, sys
    def peak_mib():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    random.seed(12)
    words = ["".join(random.choices("abcdefghijklmnopqrstuvwxyz", k=n)) for n in range(2, 10) for _ in range(200)]
    def long_line(size):  # words and spaces, no sentence break, no repeated unit
        return " ".join(random.choices(words, k=size // 5))[:size]
""")

SPLIT_AND_EMBED = PREAMBLE + textwrap.dedent("""
    from windowrag_pg.embed import get_embedder
    from windowrag_pg.ingest import parse_source
    from windowrag_pg.sources import SourceDocument
    from windowrag_pg.split.sentences import split_units
    embedder = get_embedder()
    embedder.embed_documents(["warm up the session", "and its memory arena"])
    text = long_line(5_000_000)
    idle = peak_mib()
    units = split_units(parse_source(SourceDocument(external_id="x", format="text", text=text)))
    tokens = embedder.count_tokens([u.text for u in units])
    calls = []
    # the longest units: batches of 512 tokens, where attention memory peaks
    vectors = embedder.embed_documents([u.text for u in units[:8]], progress=calls.append)
    print(json.dumps({"idle": idle, "peak": peak_mib(), "units": len(units), "longest": max(len(u.text) for u in units),
                      "covered": sum(len(u.text) for u in units), "tokens": sorted(tokens)[len(tokens) // 2], "shape": list(vectors.shape),
                      "progress_calls": len(calls)}))
""")


def run(script: str, *args: str, timeout: int = 900) -> dict:
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_5_mb_line_splits_counts_and_embeds_within_200_mib():
    measured = run(SPLIT_AND_EMBED)
    assert measured["peak"] - measured["idle"] <= LIMIT_MIB, measured
    assert 2_500 <= measured["units"] <= 2_700 and measured["longest"] <= 2000, measured
    assert measured["covered"] >= 0.99 * 5_000_000  # nothing lost but the spaces at cuts
    assert measured["tokens"] > 300 and measured["shape"] == [8, 384]
    assert measured["progress_calls"] >= 4  # batches of 2 texts of 512 tokens, each reported


INGEST = PREAMBLE + textwrap.dedent("""
    import windowrag_pg as wr
    from windowrag_pg.embed import get_embedder
    embedder = get_embedder()
    embedder.embed_documents(["warm up the session", "and its memory arena"])
    conn = wr.connect(sys.argv[1], autocommit=True)
    ingestor = wr.Ingestor(conn, collection=sys.argv[2], embedder=embedder)
    text = long_line(int(sys.argv[3]))
    idle = peak_mib()
    progress = []
    report = ingestor.ingest([wr.SourceDocument(external_id="line", format="text", text=text)], on_units=progress.append)
    print(json.dumps({"idle": idle, "peak": peak_mib(), "added": report.added, "errors": [e.message for e in report.errors],
                      "sentences": report.sentences, "progress": progress}))
""")


@pytest.mark.slow
def test_a_1_mb_line_is_ingested_within_200_mib_with_progress(db_url, collection_name):
    # ~500 units of 512 tokens: several minutes of embedding on 2 cores
    measured = run(INGEST, db_url, collection_name, "1000000", timeout=3600)
    assert measured["added"] == 1 and not measured["errors"], measured
    assert measured["peak"] - measured["idle"] <= LIMIT_MIB, measured
    assert sum(measured["progress"]) == measured["sentences"] >= 500 and len(measured["progress"]) >= 100
