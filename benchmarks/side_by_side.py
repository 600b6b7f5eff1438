"""windowrag-pg side by side with a bare-SQL reference: the same N real sentences and vectors in both,
in one run (issue 11): ingest seconds, bytes per sentence by relation, interleaved query latency,
recall@5 against exact search, and an incremental ingest into the live, indexed data.

    python benchmarks/side_by_side.py --size 100000 --queries 200 --home /tmp/wr-side-by-side
    python benchmarks/side_by_side.py --size 1000000 --home /tmp/wr-side-by-side-1m

How (the report goes to benchmarks/out/side_by_side_<N>.md, git-ignored):
1. Real units and vectors as benchmarks/query.py makes them (its cached_units: squad-dev articles,
   every --handbook-every-th handbook page and --contractnli-every-th contract, all by default; split by windowrag_pg, embedded
   with BGE-small INT8, cached in benchmarks/out/). Documents are the real source documents
   (parsed and split by the library as it ingests them). One pass holds every document once; the
   passes after the first are copies in a new seeded document order, with external_id
   "<id>#copy<pass>", the same text, and noisy vectors (query.py's make_vectors: N(0, sigma^2) per
   component, re-normalised). Whole documents only: the rows are the first documents reaching
   --size sentences (up to one document more; the report gives the exact count); --more-documents
   adds real documents (eval format, e.g. benchmarks/man_pages_corpus.py) to the first pass, so
   that 100k rows can all be distinct text. The next
   documents reaching --incremental-sample sentences are kept for step 6.
2. Two fresh embedded servers (--home/windowrag, --home/bare) with query.py's server settings.
   windowrag-pg: `Ingestor(bulk=True)` from the library, migrated to head by it as usual, with an
   embedder that returns the precomputed vectors: each call must ask for exactly the next planned
   texts (keyed by order, checked text by text, since copies repeat texts with other vectors), and
   token counts come from a table made beforehand, so embedding and tokenising are excluded.
   windowrag's seconds include parsing and splitting the documents (bare SQL gets ready rows); the
   report gives the parse + split time of one pass to weigh it.
   Bare SQL: one table (id bigserial primary key, doc_id, ordinal, text, embedding halfvec(384)),
   COPY (binary), then a btree on (doc_id, ordinal) and HNSW (halfvec_cosine_ops, m = 24, the
   library's maintenance_work_mem / parallel workers for its index build; a plain CREATE INDEX where
   the library builds CONCURRENTLY), then ANALYZE. The bare table is loaded first.
3. Bytes: after VACUUM ANALYZE, every table (pg_table_size: heap + TOAST + FSM + VM) and every index
   (pg_relation_size) in schema windowrag (library) and public (bare), listed from pg_class, / N.
4. Latency (query embedding excluded, prepare=False), query by query in turn against both, the
   order of the statements rotating per query: (a) bare: one statement, HNSW top 5
   (hnsw.ef_search = 100) with each hit's +-3 neighbours range-joined by (doc_id, ordinal), one
   row per hit (no clamp to sections, no merging of overlapping windows, which windowrag does;
   enable_seqscan off in its session so that HNSW serves it at every size);
   (b) `windowrag.search_windows(..., k => 5, window_size => 3)` (hybrid + windows);
   (c) `windowrag.dense_search(c, e, 5)`; (d) `search_windows(..., mode => 'dense')` (the same
   windows from the dense list alone: what the BM25 leg costs); with --extra-ef-search M, (a), (b) and (c)
   again at ef_search M (the ratio at an equal search width). --warmup queries first, not counted. The report shows the
   bare statement's plan once (EXPLAIN ANALYZE): which indexes served it and whether JIT ran.
5. Recall@5 against exact (numpy brute-force cosine over the float32 vectors) of dense_search and of
   the bare HNSW top 5, at ef_search 100, 200 and 400 (not timed); also counted by the real
   sentences the rows copy (a copy of the right sentence counts as found).
6. Incremental: the sample documents (--incremental-sample sentences, 5,000 by default: 1,000 took
   2-3 s a side, too short to be steady) ingested with `Ingestor(bulk=False)` into the live
   collection and INSERTed into the indexed bare table, one document per transaction, document by
   document into one and then the other, so that both see the same load. The BM25 packs windowrag's
   ingests run on their own once enough is written (store/bm25.py) are in its seconds, and listed:
   a sample of 40,000 at 100k (--incremental-sample 40000) runs a few recent packs.
Not a test: ratios from one run; absolute times mean something only on an idle machine.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
from pgvector import HalfVector
from pgvector.psycopg import register_vector
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import query as q  # noqa: E402  benchmarks/query.py: real units, vectors, server settings

from windowrag_pg.db.connection import connect  # noqa: E402
from windowrag_pg.db.embedded import stop_embedded  # noqa: E402
from windowrag_pg.db.native import native_state  # noqa: E402
from windowrag_pg.db.sqlfiles import load_sql  # noqa: E402
from windowrag_pg.embed import get_embedder  # noqa: E402
from windowrag_pg.embed.base import Embedder, EmbeddingError  # noqa: E402
from windowrag_pg.ingest import Ingestor  # noqa: E402
from windowrag_pg.store.collections import INDEX_BUILD_MEMORY, INDEX_BUILD_WORKERS  # noqa: E402
from windowrag_pg.store.bm25 import PACK_MIN_POSTINGS, PACK_SHARE  # noqa: E402

COLLECTION = "side_by_side"
K, EF_DEFAULT = 5, 100  # the statements below say 5 and 3 (window) as literals
BARE_TABLE = """CREATE TABLE bare_sentences (id bigserial PRIMARY KEY, doc_id bigint NOT NULL,
    ordinal integer NOT NULL, text text NOT NULL, embedding halfvec(384) NOT NULL)"""
BARE_BTREE = "CREATE INDEX bare_sentences_doc_ordinal ON bare_sentences (doc_id, ordinal)"
BARE_HNSW = "CREATE INDEX bare_sentences_hnsw ON bare_sentences USING hnsw (embedding halfvec_cosine_ops) WITH (m = 24)"
BARE_INSERT = "INSERT INTO bare_sentences (doc_id, ordinal, text, embedding) VALUES (%s, %s, %s, %s)"
BARE_TOP = "SELECT id FROM bare_sentences ORDER BY embedding <=> %(e)s::halfvec(384) LIMIT 5"
STATEMENTS = {  # the three measured statements, by label
    "bare dense + windows": """WITH hits AS (
        SELECT id, doc_id, ordinal, embedding <=> %(e)s::halfvec(384) AS distance
        FROM bare_sentences ORDER BY embedding <=> %(e)s::halfvec(384) LIMIT 5)
    SELECT h.id, h.distance, string_agg(w.text, ' ' ORDER BY w.ordinal) AS window_text
    FROM hits h JOIN bare_sentences w ON w.doc_id = h.doc_id AND w.ordinal BETWEEN h.ordinal - 3 AND h.ordinal + 3
    GROUP BY h.id, h.distance ORDER BY h.distance, h.id""",
    "windowrag search_windows (hybrid + windows)":
        "SELECT * FROM windowrag.search_windows(%(c)s, %(q)s, %(e)s, k => 5, window_size => 3)",
    "windowrag dense_search": "SELECT sentence_id FROM windowrag.dense_search(%(c)s, %(e)s, 5)",
    # the same windows with the dense list alone: what the BM25 leg costs in the hybrid statement
    "windowrag search_windows (dense + windows)":
        "SELECT * FROM windowrag.search_windows(%(c)s, %(q)s, %(e)s, k => 5, window_size => 3, mode => 'dense')",
}


def extra_statements(ef_search: int) -> dict[str, str]:
    """The bare, hybrid and dense statements again at another ef_search (--extra-ef-search): what a
    wider HNSW search costs each, measured in the same interleaving (the bare one on a connection of
    its own whose hnsw.ef_search is set to it; the others take it as the parameter ef)."""
    return {
        f"bare dense + windows, ef_search {ef_search}": STATEMENTS["bare dense + windows"],
        f"windowrag search_windows (hybrid + windows), ef_search {ef_search}":
            STATEMENTS["windowrag search_windows (hybrid + windows)"][:-1] + ", ef_search => %(ef)s)",
        f"windowrag dense_search, ef_search {ef_search}":
            STATEMENTS["windowrag dense_search"][:-1] + ", NULL, %(ef)s)",
    }


TARGETS = {"ingest": 2.0, "incremental": 1.3, "bytes": 2450, "p95": 1.8, "recall": 0.99}


# ---------------------------------------------------------------- rows: real documents and their copies

@dataclasses.dataclass(slots=True)
class Plan:
    """The documents to load, in order, and their rows (row i copies real unit source[i])."""
    documents: list  # SourceDocument
    source: np.ndarray  # unit index per row
    vectors: np.ndarray  # float32 (rows, 384)
    doc_rows: list[range]  # rows of each document

    def part(self, first_doc: int, stop_doc: int) -> Plan:
        rows = range(self.doc_rows[first_doc].start, self.doc_rows[stop_doc - 1].stop)
        return Plan(self.documents[first_doc:stop_doc], self.source[rows.start:rows.stop],
                    self.vectors[rows.start:rows.stop],
                    [range(r.start - rows.start, r.stop - rows.start) for r in self.doc_rows[first_doc:stop_doc]])


def real_documents(args, embedder) -> tuple[list, list[str], np.ndarray, float]:
    """Real source documents with the global index of their first unit, the unit texts and vectors,
    and the seconds the library's parse + split of one pass of them took."""
    corpora = [("squad", q.EVAL / "squad-dev" / "documents.jsonl", 1)]
    if args.handbook_every:
        corpora.append((f"handbook_every{args.handbook_every}", q.EVAL / "handbook" / "documents.jsonl", args.handbook_every))
    if args.contractnli_every:
        corpora.append((f"contractnli_every{args.contractnli_every}", q.EVAL / "contractnli-dev" / "documents.jsonl",
                        args.contractnli_every))
    corpora += [(f"more_{path.stem}", path, 1) for path in args.more_documents]
    documents, texts, vectors, split_seconds = [], [], [], 0.0
    for name, path, every in corpora:
        started = time.perf_counter()
        split = q.split_source_documents(path, every)
        split_seconds += time.perf_counter() - started
        _, unit_vectors = q.cached_units(name, path, every, embedder, texts=[t for _, ts in split for t in ts])
        for source, doc_texts in split:
            documents.append((source, len(texts), len(doc_texts)))
            texts.extend(doc_texts)
        vectors.append(unit_vectors)
    return documents, texts, np.concatenate(vectors).astype(np.float32), split_seconds


def plan_rows(documents, base: np.ndarray, rows: int, noise: float, seed: int) -> Plan:
    """Whole documents, pass after pass (a new seeded document order per pass), until ROWS rows."""
    rng = np.random.default_rng(seed)
    chosen, sources, doc_rows, total, copy = [], [], [], 0, 0
    while total < rows:
        for d in (rng.permutation(len(documents)) if copy else range(len(documents))):
            source, first, count = documents[d]
            chosen.append(dataclasses.replace(source, external_id=f"{source.external_id}#copy{copy}") if copy else source)
            sources.append(np.arange(first, first + count))
            doc_rows.append(range(total, total + count))
            total += count
            if total >= rows:
                break
        copy += 1
    source = np.concatenate(sources)
    _, vectors = q.make_vectors(base, len(source), noise, seed, source=source)
    return Plan(chosen, source, vectors, doc_rows)


class PrecomputedEmbedder(Embedder):
    """The library's embedder interface over precomputed vectors: each call must ask for exactly the
    next planned texts (copies repeat texts with other vectors, so the lookup is by order)."""

    query_instruction = None

    def __init__(self, model_id: str, texts: list[str], vectors: np.ndarray, tokens: dict[str, int]) -> None:
        self.model_id, self._texts, self._vectors, self._tokens, self._next = model_id, texts, vectors, tokens, 0

    @property
    def dimension(self) -> int:
        return self._vectors.shape[1]

    def _embed(self, texts, *, batch_size, progress):
        stop = self._next + len(texts)
        if self._texts[self._next:stop] != texts:
            raise EmbeddingError(f"precomputed vectors: texts asked out of the planned order at row {self._next}")
        self._next = stop
        if progress:
            progress(len(texts))
        return self._vectors[stop - len(texts):stop]

    def count_tokens(self, texts):
        return [self._tokens[t] for t in texts]


# ---------------------------------------------------------------- loading

def fresh_server(home: Path) -> str:
    if (home / "pgdata").exists():
        sys.exit(f"{home}: a server is already there; this benchmark needs fresh ones (another --home)")
    return q.configure_server(home)


def plan_embedder(plan: Plan, texts: list[str], tokens: dict, model_id: str) -> PrecomputedEmbedder:
    """The precomputed vectors of PLAN's rows, in their order."""
    return PrecomputedEmbedder(model_id, [texts[i] for i in plan.source], plan.vectors, tokens)


def windowrag_bulk_load(url: str, plan: Plan, texts: list[str], tokens: dict, model_id: str,
                        vector_index: str | None = None):
    embedder = plan_embedder(plan, texts, tokens, model_id)
    with connect(url, autocommit=True) as conn:
        # the planned vectors are the units' own (no contextual header): headers change what is
        # embedded, not what is stored, so the sizes and times compare the same rows
        ingestor = Ingestor(conn, collection=COLLECTION, embedder=embedder, bulk=True, vector_index=vector_index,
                            contextual_headers=False)
        bar = tqdm(total=len(plan.documents), desc="windowrag ingest (bulk=True)", unit="doc", mininterval=2)
        report = ingestor.ingest(plan.documents, on_document=lambda *_: bar.update(1))
        bar.close()
    if report.errors or report.sentences != len(plan.source):
        sys.exit(f"windowrag ingest: {report.sentences} of {len(plan.source)} sentences; errors {report.errors[:3]}")
    return report


@dataclasses.dataclass
class Incremental:
    """Step 6's totals, and the BM25 packs the windowrag ingests ran on their own within it."""
    windowrag: float
    bare: float
    packs: list[tuple[str, float]]  # ("recent" | "full", the seconds of the ingest call that ran it)
    typical_document: float  # median seconds of the windowrag calls that ran no pack

    def own_pack_seconds(self) -> float:
        """The packs' share of windowrag's seconds: each call that ran one, over the median call."""
        return sum(seconds - self.typical_document for _, seconds in self.packs)


def pack_marks(conn, cid: int) -> tuple[int, int]:
    """(the last fully packed sentence id, postings in the recent tier): which pack ran, if any."""
    return conn.execute("SELECT packed_through, recent_postings FROM windowrag.bm25_stats "
                        "WHERE collection_id = %s", [cid]).fetchone()


def interleaved_incremental(url: str, bare, plan: Plan, texts: list[str], tokens: dict, model_id: str,
                            doc_base: int) -> Incremental:
    """Step 6: each document into windowrag-pg (`Ingestor(bulk=False)`, one Ingestor for all, its
    own seconds less embedding, the BM25 packs it runs once enough is written included) and then
    into the indexed bare table, document by document, so that both see the same load."""
    embedder = plan_embedder(plan, texts, tokens, model_id)
    wr_seconds = bare_seconds = 0.0
    packs, plain = [], []
    with connect(url, autocommit=True) as conn:
        ingestor = Ingestor(conn, collection=COLLECTION, embedder=embedder, bulk=False, contextual_headers=False)
        cid = conn.execute("SELECT id FROM windowrag.collections WHERE name = %s", [COLLECTION]).fetchone()[0]
        marks = pack_marks(conn, cid)
        for d in tqdm(range(len(plan.documents)), desc="incremental, interleaved", unit="doc", mininterval=2):
            report = ingestor.ingest(plan.documents[d:d + 1])
            if report.errors or report.sentences != len(plan.doc_rows[d]):
                sys.exit(f"windowrag incremental ingest: {report.sentences} of {len(plan.doc_rows[d])} "
                         f"sentences; errors {report.errors[:3]}")
            seconds = report.seconds - report.embed_seconds
            wr_seconds += seconds
            after = pack_marks(conn, cid)  # outside the timed call
            if after[0] != marks[0]:
                packs.append(("full", seconds))
            elif after[1] != marks[1]:
                packs.append(("recent", seconds))
            else:
                plain.append(seconds)
            marks = after
            bare_seconds += bare_insert_documents(bare, plan.part(d, d + 1), texts, doc_base=doc_base + d)
    return Incremental(wr_seconds, bare_seconds, packs, statistics.median(plain) if plain else 0.0)


def packs_line(inc: Incremental) -> str:
    """What the sample's own packs cost, in the figure above (a document's seconds over the median)."""
    if not inc.packs:
        return "The sample ran no BM25 pack."
    kinds = {kind: [seconds - inc.typical_document for k, seconds in inc.packs if k == kind] for kind in ("recent", "full")}
    parts = [f"{len(v)} {kind} ({', '.join(f'{x:.1f}' for x in v)} s)" for kind, v in kinds.items() if v]
    total = inc.own_pack_seconds()
    return (f"It includes the BM25 packs the ingests ran on their own: {' and '.join(parts)}, "
            f"{total:.1f} s in all ({total / inc.windowrag:.0%} of windowrag's seconds); without them "
            f"{(inc.windowrag - total) / inc.bare:.2f}×.")


def time_pack(conn) -> tuple[float, int, int]:
    """One BM25 pack of the collection after the incremental sample (what an incremental ingest
    triggers once the rows written since the last one reach PACK_SHARE of the packed postings, and
    PACK_MIN_POSTINGS): its seconds, the postings packed and the collection's sentences."""
    cid = conn.execute("SELECT id FROM windowrag.collections WHERE name = %s", [COLLECTION]).fetchone()[0]
    started = time.perf_counter()
    packed = conn.execute("SELECT windowrag.bm25_rebuild(%s)", [cid]).fetchone()[0]
    seconds = time.perf_counter() - started
    sentences = conn.execute("SELECT count(*) FROM windowrag.sentences WHERE collection_id = %s", [cid]).fetchone()[0]
    return seconds, packed, sentences


def bare_connect(url: str) -> psycopg.Connection:
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    register_vector(conn)
    conn.execute("SET statement_timeout = 0")
    # the reference is an HNSW top 5 at any size (on a few thousand rows the planner would sort a
    # sequential scan instead; on 100k it takes the index anyway); the report shows the plan
    conn.execute("SET enable_seqscan = off")
    return conn


def bare_rows(plan: Plan, texts: list[str], doc_base: int):
    for d, rows in enumerate(plan.doc_rows):
        for ordinal, row in enumerate(rows):
            yield doc_base + d, ordinal, texts[plan.source[row]], HalfVector(plan.vectors[row])


def bare_load(conn, plan: Plan, texts: list[str]) -> dict[str, float]:
    """COPY, then the btree for the windows, then HNSW with the library's index build settings."""
    conn.execute(BARE_TABLE)
    seconds = {}
    started = time.perf_counter()
    with conn.cursor().copy("COPY bare_sentences (doc_id, ordinal, text, embedding) FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types(["int8", "int4", "text", "halfvec"])
        for row in tqdm(bare_rows(plan, texts, 0), total=len(plan.source), desc="bare COPY", mininterval=2):
            cp.write_row(row)
    seconds["COPY"] = time.perf_counter() - started
    if conn.execute("SELECT min(id), max(id), count(*) FROM bare_sentences").fetchone() != (1, len(plan.source), len(plan.source)):
        sys.exit("bare COPY: the ids are not the rows' order + 1 (recall maps id - 1 to the row)")
    started = time.perf_counter()
    conn.execute(BARE_BTREE)
    seconds["btree (doc_id, ordinal)"] = time.perf_counter() - started
    memory, _, _, enough = conn.execute(load_sql("index_build_settings"), [INDEX_BUILD_MEMORY]).fetchone()
    conn.execute(load_sql("set_index_build_settings"),
                 [memory if enough else INDEX_BUILD_MEMORY, str(INDEX_BUILD_WORKERS), "0"])
    started = time.perf_counter()
    conn.execute(BARE_HNSW)
    conn.execute("ANALYZE bare_sentences")
    seconds["HNSW + ANALYZE"] = time.perf_counter() - started
    return seconds


def bare_insert_documents(conn, plan: Plan, texts: list[str], doc_base: int) -> float:
    """The incremental reference: one document per transaction into the indexed table."""
    rows = list(bare_rows(plan, texts, doc_base))
    started = time.perf_counter()
    offset = 0
    for doc_rows in plan.doc_rows:
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(BARE_INSERT, rows[offset:offset + len(doc_rows)])
        offset += len(doc_rows)
    return time.perf_counter() - started


# ---------------------------------------------------------------- bytes

RELATIONS_SQL = """SELECT c.relname, c.relkind, coalesce(am.amname, ''), coalesce(t.relname, ''),
       CASE WHEN c.relkind = 'i' THEN pg_relation_size(c.oid) ELSE pg_table_size(c.oid) END
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_am am ON am.oid = c.relam
LEFT JOIN pg_index i ON i.indexrelid = c.oid LEFT JOIN pg_class t ON t.oid = i.indrelid
WHERE n.nspname = %s AND c.relkind IN ('r', 'i', 'S', 'm') ORDER BY 5 DESC, 1"""
KIND = {"r": "table (heap + TOAST + FSM + VM)", "S": "sequence", "m": "materialized view"}


def relation_bytes(conn, schema: str) -> list[tuple[str, str, int]]:
    """(relation, the table it belongs to, bytes) for every relation of SCHEMA, after VACUUM ANALYZE."""
    conn.execute("VACUUM ANALYZE")
    return [(f"{schema}.{name} — {KIND.get(kind) or f'{am} index on {table}'}",
             table or (name if kind == "r" else KIND[kind] + "s"), size)
            for name, kind, am, table, size in conn.execute(RELATIONS_SQL, [schema]).fetchall()]


# ---------------------------------------------------------------- queries

def interleaved_latency(conns: dict, statements: dict[str, str], queries: list[str], qvecs: np.ndarray,
                        warmup: int, ef_search: int | None = None) -> dict[str, list[float]]:
    labels = list(statements)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for i, (text, vec) in enumerate(tqdm(list(zip(queries, qvecs)), desc="interleaved queries")):
        params = {"c": COLLECTION, "q": text, "e": vec, "ef": ef_search}
        for label in labels[i % len(labels):] + labels[:i % len(labels)]:  # each first as often as the others
            started = time.perf_counter()
            conns[label].execute(statements[label], params, prepare=False).fetchall()
            if i >= warmup:
                times[label].append((time.perf_counter() - started) * 1000)
    return times


def plan_summary(conn, statement: str, params: dict) -> str:
    """The nodes of one EXPLAIN ANALYZE (with their index), whether JIT ran, and the execution time."""
    [[plan]] = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params, prepare=False).fetchone()

    def render(node: dict) -> str:
        name = node["Node Type"] + (f" on {node['Index Name']}" if "Index Name" in node else "")
        children = node.get("Plans", [])
        return f"{name}({', '.join(render(child) for child in children)})" if children else name

    return (f"`{render(plan['Plan'])}`; JIT: {'yes' if 'JIT' in plan else 'no'}; "
            f"planning {plan['Planning Time']:.2f} ms, execution {plan['Execution Time']:.2f} ms")


def exact_top(vectors: np.ndarray, qvecs: np.ndarray) -> list[set[int]]:
    """Rows of the K nearest by cosine (unit vectors: inner product), brute force in blocks."""
    tops = []
    for start in range(0, len(qvecs), 20):
        sims = qvecs[start:start + 20] @ vectors.T
        tops.extend(set(row.tolist()) for row in np.argpartition(-sims, K, axis=1)[:, :K])
    return tops


def windowrag_row_of(conn, plan: Plan) -> dict[int, int]:
    """sentence id → plan row, by (external_id, ordinal)."""
    first = {doc.external_id: rows.start for doc, rows in zip(plan.documents, plan.doc_rows)}
    rows = conn.execute("SELECT s.id, d.external_id, s.ordinal FROM windowrag.sentences s "
                        "JOIN windowrag.documents d ON d.id = s.document_id").fetchall()
    return {sid: first[ext] + ordinal for sid, ext, ordinal in rows if ext in first}


def recall(wr, bare, plan: Plan, qvecs: np.ndarray) -> dict[int, tuple[float, float, float, float]]:
    truth = exact_top(plan.vectors, qvecs)
    truth_units = [set(plan.source[list(t)]) for t in truth]
    row_of = windowrag_row_of(wr, plan)
    result = {}
    for ef in (EF_DEFAULT, 200, 400):
        bare.execute("SELECT set_config('hnsw.ef_search', %s, false)", [str(int(ef))])
        found_wr, found_bare = [], []
        for vec in qvecs:
            found_wr.append({row_of[r[0]] for r in wr.execute(
                "SELECT sentence_id FROM windowrag.dense_search(%s, %s, 5, NULL, %s)", [COLLECTION, vec, ef]).fetchall()})
            found_bare.append({r[0] - 1 for r in bare.execute(BARE_TOP, {"e": vec}).fetchall()})  # id = row + 1
        rows = tuple(float(np.mean([len(f & t) / K for f, t in zip(found, truth)])) for found in (found_wr, found_bare))
        # the same at the level of the real sentences the rows copy: the share of the distinct
        # sentences among the exact top 5 of which a copy was returned (copies are the same evidence)
        units = tuple(float(np.mean([len(set(plan.source[list(f)]) & u) / len(u) for f, u in zip(found, truth_units)]))
                      for found in (found_wr, found_bare))
        result[ef] = rows + units
    bare.execute("SELECT set_config('hnsw.ef_search', %s, false)", [str(EF_DEFAULT)])
    return result


# ---------------------------------------------------------------- report

def bytes_lines(sizes: dict[str, list[tuple[str, str, int]]], rows: int) -> tuple[list[str], list[str], dict[str, int]]:
    """Per relation, per table with its indexes, and the totals."""
    lines = ["| system | relation | bytes | bytes / sentence |", "|---|---|---:|---:|"]
    grouped = ["| system | table with its indexes | bytes / sentence |", "|---|---|---:|"]
    totals = {}
    for system, relations in sizes.items():
        by_table: dict[str, int] = {}
        for label, table, size in relations:
            lines.append(f"| {system} | {label} | {size:,} | {size / rows:,.0f} |")
            by_table[table] = by_table.get(table, 0) + size
        totals[system] = sum(by_table.values())
        lines.append(f"| {system} | **total** | {totals[system]:,} | **{totals[system] / rows:,.0f}** |")
        grouped += [f"| {system} | {table} | {size / rows:,.0f} |"
                    for table, size in sorted(by_table.items(), key=lambda item: -item[1])]
        grouped.append(f"| {system} | **total** | **{totals[system] / rows:,.0f}** |")
    return lines, grouped, totals


def latency_lines(times: dict[str, list[float]]) -> list[str]:
    lines = ["| statement | queries | p50 ms | p95 ms | p99 ms | mean ms |", "|---|---:|---:|---:|---:|---:|"]
    for label, values in times.items():
        lines.append(f"| {label} | {len(values)} | {q.pct(values, 50):.2f} | {q.pct(values, 95):.2f} | "
                     f"{q.pct(values, 99):.2f} | {statistics.fmean(values):.2f} |")
    bare = times[next(iter(times))]
    for label, values in list(times.items())[1:]:
        lines.append(f"| {label} / bare | | {q.pct(values, 50) / q.pct(bare, 50):.2f}× | "
                     f"{q.pct(values, 95) / q.pct(bare, 95):.2f}× | | |")
    return lines


def wide_ratio_lines(times: dict[str, list[float]], ef_search: int | None,
                     recalls: dict[int, tuple[float, float, float, float]]) -> list[str]:
    """With --extra-ef-search: the hybrid statement against the bare one at that same ef_search, and
    the default hybrid statement against the bare one at that ef_search (with their recalls when
    measured there: a comparison at nearer recall)."""
    if not ef_search:
        return []
    bare, hybrid = (times[label] for label in list(extra_statements(ef_search))[:2])
    default = times["windowrag search_windows (hybrid + windows)"]
    recall = (f" (dense recall@5 {recalls[EF_DEFAULT][0]:.3f} at ef_search {EF_DEFAULT} against the bare one's "
              f"{recalls[ef_search][1]:.3f} at {ef_search})" if ef_search in recalls else "")
    return ["", f"At ef_search {ef_search} for both: hybrid + windows / bare dense + windows "
            f"p50 {q.pct(hybrid, 50) / q.pct(bare, 50):.2f}×, p95 {q.pct(hybrid, 95) / q.pct(bare, 95):.2f}×.",
            f"The default hybrid + windows (ef_search {EF_DEFAULT}) / bare dense + windows at ef_search {ef_search}: "
            f"p50 {q.pct(default, 50) / q.pct(bare, 50):.2f}×, p95 {q.pct(default, 95) / q.pct(bare, 95):.2f}×{recall}."]


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "**not met**"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="sentences (whole documents: up to one more)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--incremental-sample", type=int, default=5000,
                        help="sentences ingested incrementally after, document by document into both in turn")
    parser.add_argument("--home", type=Path, default=Path("/tmp/wr-side-by-side"),
                        help="this benchmark's servers go to HOME/windowrag and HOME/bare (fresh; never the default home)")
    parser.add_argument("--noise", type=float, default=0.015)
    parser.add_argument("--seed", type=int, default=7)
    # Every real document by default: mostly-real rows at 100k (57,312 real units, the rest copies).
    parser.add_argument("--handbook-every", type=int, default=1, help="handbook pages used: every N-th (0: none)")
    parser.add_argument("--contractnli-every", type=int, default=1, help="ContractNLI contracts: every N-th (0: none)")
    parser.add_argument("--more-documents", type=Path, action="append", default=[], metavar="JSONL",
                        help="more real documents (eval format) after those, before any copy: e.g. the man pages "
                             "of benchmarks/man_pages_corpus.py, for rows that are all distinct text")
    parser.add_argument("--keep-servers", action="store_true", help="leave both servers running at the end")
    parser.add_argument("--vector-index", choices=("halfvec", "binary"), default="halfvec",
                        help="the windowrag collection's vector index (the bare reference is always halfvec)")
    parser.add_argument("--extra-ef-search", type=int, default=None,
                        help="also time the bare, hybrid and dense statements at this ef_search (paired)")
    args = parser.parse_args()
    q.OUT.mkdir(parents=True, exist_ok=True)
    loads = {"start": q.uptime()}

    embedder = get_embedder()
    documents, texts, base, split_seconds = real_documents(args, embedder)
    tokens = dict(zip(texts, embedder.count_tokens(texts)))
    queries, qvecs = q.load_queries(embedder, args.queries + args.warmup, args.seed)
    whole = plan_rows(documents, base, args.size + args.incremental_sample, args.noise, args.seed + args.size)
    split = next(d for d, rows in enumerate(whole.doc_rows) if rows.stop >= args.size) + 1
    if split == len(whole.documents):
        sys.exit(f"--incremental-sample {args.incremental_sample}: the last bulk document already holds those rows, "
                 "so no document is left for the incremental ingest; take a larger sample")
    bulk, extra = whole.part(0, split), whole.part(split, len(whole.documents))
    n = len(bulk.source)
    q.log(f"{n} rows in {len(bulk.documents)} documents (+ {len(extra.source)} in {len(extra.documents)} for the "
          f"incremental sample); {len(base)} real units")

    homes = {"windowrag": args.home / "windowrag", "bare": args.home / "bare"}
    urls = {system: fresh_server(home) for system, home in homes.items()}
    try:
        q.log(f"bare: COPY + index; load {q.uptime()}")
        bare = bare_connect(urls["bare"])
        bare_seconds = bare_load(bare, bulk, texts)
        q.log(f"bare: {bare_seconds}; windowrag bulk ingest; load {q.uptime()}")
        wr_report = windowrag_bulk_load(urls["windowrag"], bulk, texts, tokens, embedder.model_id,
                                        vector_index=args.vector_index)
        q.log(f"windowrag: {wr_report.as_dict()}")
        loads["after loading"] = q.uptime()
        wr = connect(urls["windowrag"], autocommit=True)
        wr.execute("SET statement_timeout = 0")
        sizes = {"windowrag-pg": relation_bytes(wr, "windowrag"), "bare SQL": relation_bytes(bare, "public")}
        native = native_state(wr)[0]
        settings = q.settings_table(wr)

        bare.execute("SELECT set_config('hnsw.ef_search', %s, false)", [str(EF_DEFAULT)])
        loads["before queries"] = q.uptime()
        statements = dict(STATEMENTS)
        conns = {label: bare if label.startswith("bare") else wr for label in STATEMENTS}
        if args.extra_ef_search:
            wide_bare = bare_connect(urls["bare"])
            wide_bare.execute("SELECT set_config('hnsw.ef_search', %s, false)", [str(args.extra_ef_search)])
            wide = extra_statements(args.extra_ef_search)
            statements.update(wide)
            conns.update({label: wide_bare if label.startswith("bare") else wr for label in wide})
        times = interleaved_latency(conns, statements, queries, qvecs, args.warmup, ef_search=args.extra_ef_search)
        q.log("latency: " + "; ".join(f"{label} p50 {q.pct(v, 50):.1f} p95 {q.pct(v, 95):.1f} ms" for label, v in times.items()))
        loads["after queries"] = q.uptime()
        recalls = recall(wr, bare, bulk, qvecs[args.warmup:])
        q.log(f"recall@5 (windowrag, bare) by ef_search: {recalls}")
        bare_plan = plan_summary(bare, STATEMENTS["bare dense + windows"], {"e": qvecs[args.warmup]})

        q.log(f"incremental sample: {len(extra.source)} rows; load {q.uptime()}")
        inc = interleaved_incremental(urls["windowrag"], bare, extra, texts, tokens, embedder.model_id,
                                      doc_base=len(bulk.documents))
        inc_wr, inc_bare = inc.windowrag, inc.bare
        pack_seconds, packed, sentences_packed = time_pack(wr)
        loads["end"] = q.uptime()
        wr.close()
        bare.close()
        if args.extra_ef_search:
            wide_bare.close()
    finally:
        if not args.keep_servers:
            for home in homes.values():
                stop_embedded(home, timeout=120)

    wr_total = wr_report.seconds - wr_report.embed_seconds
    bare_total = sum(bare_seconds.values())
    postings_per_sentence = packed / sentences_packed
    pack_every = max(PACK_MIN_POSTINGS, PACK_SHARE * packed) / postings_per_sentence  # sentences between packs
    # without the sample's own packs, with its share of full packs instead
    inc_packed = inc_wr - inc.own_pack_seconds() + len(extra.source) * pack_seconds / pack_every
    byte_table, byte_groups, totals = bytes_lines(sizes, n)
    label_a, label_b = list(STATEMENTS)[:2]  # bare; hybrid + windows
    p95_ratio = q.pct(times[label_b], 95) / q.pct(times[label_a], 95)
    wr_bytes = totals["windowrag-pg"] / n
    report = [
        f"## Side by side at {n:,} sentences", "",
        f"- command: `python benchmarks/side_by_side.py {' '.join(sys.argv[1:])}`",
        f"- machine: {os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB RAM",
        *[f"- load {when}: `{value}`" for when, value in loads.items()],
        f"- rows: {n:,} sentences in {len(bulk.documents):,} documents (whole real documents; {len(base):,} real "
        f"units{''.join(f', with {path}' for path in args.more_documents)}; "
        f"{int(np.sum(bulk.source != np.arange(n))):,} rows are noisy copies, sigma {args.noise}, seed {args.seed}); incremental sample "
        f"{len(extra.source):,} sentences in {len(extra.documents):,} documents",
        f"- windowrag collection's vector index: {args.vector_index}",
        f"- BM25 sums: {f'in C (windowrag_native {native})' if native else 'in SQL (windowrag_native not installed)'}",
        f"- queries: {args.queries} SQuAD dev questions after {args.warmup} warm-up, interleaved, prepare=False, "
        "embedding excluded",
        "", "Server settings (both servers):", "", *settings,
        "", "### Ingest (embedding and tokenising excluded)", "",
        "| system | writing the rows s | index build s | total s |", "|---|---:|---:|---:|",
        f"| bare SQL: COPY; btree (doc_id, ordinal) + HNSW + ANALYZE | {bare_seconds['COPY']:.1f} | "
        f"{bare_seconds['btree (doc_id, ordinal)']:.1f} + {bare_seconds['HNSW + ANALYZE']:.1f} | {bare_total:.1f} |",
        f"| windowrag-pg `Ingestor(bulk=True)` | {wr_total - wr_report.index_seconds:.1f} | "
        f"{wr_report.index_seconds:.1f} | {wr_total:.1f} |",
        f"| ratio windowrag / bare | | | **{wr_total / bare_total:.2f}×** |", "",
        f"windowrag's time includes parsing and splitting the documents (bare SQL gets its rows ready-made): "
        f"one pass over the {len(base):,} real units' documents took {split_seconds:.1f} s in this run "
        f"(the load holds {n / len(base):.1f} passes, about {split_seconds * n / len(base):.0f} s).",
        "", f"Incremental, {len(extra.source):,} more sentences into the live data, document by document into "
        f"one and then the other: windowrag-pg `Ingestor(bulk=False)` {inc_wr:.2f} s, bare INSERT one document "
        f"per transaction {inc_bare:.2f} s: **{inc_wr / inc_bare:.2f}×**. {packs_line(inc)} An incremental "
        f"ingest packs once the rows written since the last pack reach {PACK_SHARE:.0%} of the "
        f"packed postings and {PACK_MIN_POSTINGS:,} (every ~{pack_every:,.0f} sentences at this size). One full pack "
        f"after the sample took {pack_seconds:.1f} s ({postings_per_sentence:.1f} postings a sentence), "
        f"{pack_seconds / pack_every * 1000:.2f} ms a sentence amortised as if every pack were full (the rule "
        f"before migration 0021; since then most packs rewrite only the recent tier: `benchmarks/pack_cost.py`): "
        f"with it instead of the sample's own packs **{inc_packed / inc_bare:.2f}×**, an upper bound.",
        "", f"### Bytes per sentence (after VACUUM ANALYZE, / {n:,})", "", *byte_groups,
        f"| ratio | windowrag / bare | **{totals['windowrag-pg'] / totals['bare SQL']:.2f}×** |",
        "", "Every relation:", "", *byte_table,
        "", "### Latency (ms)", "", *latency_lines(times), *wide_ratio_lines(times, args.extra_ef_search, recalls), "",
        f"The bare statement's plan (one EXPLAIN ANALYZE, first measured query): {bare_plan}.",
        "", "### Recall@5 against exact (numpy, float32)", "",
        "| ef_search | windowrag dense_search | bare HNSW | windowrag, distinct sentences | bare, distinct sentences |",
        "|---:|---:|---:|---:|---:|",
        *[f"| {ef} | {a:.4f} | {b:.4f} | {c:.4f} | {d:.4f} |" for ef, (a, b, c, d) in recalls.items()],
        "", "(Distinct sentences: the share of the real sentences among the exact top 5 of which the search "
        "returned some copy; where rows are noisy copies of the same sentences, the exact top 5 is often "
        "several near-equal copies of one; with no copy the two columns are the same.)",
        "", "### Against the issue's targets", "", "| target | measured | |", "|---|---:|---|",
        f"| bulk ingest ≤ {TARGETS['ingest']}× bare COPY + index | {wr_total / bare_total:.2f}× | "
        f"{verdict(wr_total / bare_total, TARGETS['ingest'])} |",
        f"| incremental ≤ {TARGETS['incremental']}× bare INSERT | {inc_wr / inc_bare:.2f}× | "
        f"{verdict(inc_wr / inc_bare, TARGETS['incremental'])} |",
        f"| the same with full BM25 packs amortised instead (an upper bound since 0021) | {inc_packed / inc_bare:.2f}× | "
        f"{verdict(inc_packed / inc_bare, TARGETS['incremental'])} |",
        f"| ≤ {TARGETS['bytes']:,} bytes per sentence | {wr_bytes:,.0f} | {verdict(wr_bytes, TARGETS['bytes'])} |",
        f"| hybrid + windows p95 ≤ {TARGETS['p95']}× bare dense + windows | {p95_ratio:.2f}× | "
        f"{verdict(p95_ratio, TARGETS['p95'])} |",
        f"| dense recall@5 ≥ {TARGETS['recall']} (ef_search {EF_DEFAULT}) | {recalls[EF_DEFAULT][0]:.4f} | "
        f"{'met' if recalls[EF_DEFAULT][0] >= TARGETS['recall'] else '**not met**'} |",
    ]
    text = "\n".join(report) + "\n"
    out = q.OUT / f"side_by_side_{args.size}{'_binary' if args.vector_index == 'binary' else ''}.md"
    out.write_text(text)
    print(text)
    q.log(f"written to {out}")


if __name__ == "__main__":
    main()
