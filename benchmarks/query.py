"""Query latency of the SQL retrieval functions at 10k / 100k / 1M sentences.

    python benchmarks/query.py --sizes 10000 100000 1000000 --queries 200 --home /tmp/wr-bench

How the rows are made (stated again in the report):
1. Real units: every squad-dev article and the handbook documents (every --handbook-every-th
   page) are parsed and split by windowrag_pg (parse_source + split_units) and embedded with
   the default embedder (BGE-small INT8 ONNX, embed_documents, batch 32). Vectors are cached in
   benchmarks/out/units_*.npy (benchmarks/ingest.py writes the handbook cache as a by-product).
2. A size-S collection takes row i from real unit perm[i mod N0] (perm: a seeded permutation of
   the N0 real units; a new permutation per pass). The first pass uses the real vector; later
   passes (copies) use the real vector + N(0, sigma^2) noise per component, re-normalised
   (sigma = --noise, default 0.015: cosine to the original ~0.96). The text is the real sentence
   text, so copies have the same tsvector (BM25 df grows with the number of copies).
3. Synthetic documents of 50 consecutive rows (text = the 50 sentences joined by a space), one
   section per 10 rows, offsets exact. documents and sections are loaded with COPY; sentences
   are COPYed (binary) to an unlogged staging table, then INSERT ... SELECT into
   windowrag.sentences in batches of --batch rows, computing tsv = to_tsvector('english', text)
   and bm25_length in Postgres; the statement triggers maintain bm25_stats/terms/postings.
4. The collection's HNSW index (sql/collection_index.sql) is created after loading, with
   maintenance_work_mem = 4GB and max_parallel_maintenance_workers = 1.

Latency excludes query embedding (queries are embedded first, with the BGE query instruction).
Every statement runs with prepare=False. Queries: real SQuAD dev questions (seeded sample).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

os.environ.setdefault("WINDOWRAG_STATEMENT_TIMEOUT_MS", "0")

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402

from windowrag_pg.db.connection import connect  # noqa: E402
from windowrag_pg.db.embedded import start_embedded, stop_embedded  # noqa: E402
from windowrag_pg.embed import get_embedder  # noqa: E402
from windowrag_pg.ingest import parse_source  # noqa: E402
from windowrag_pg.store.collections import build_collection_index, collection_index_name, get_collection  # noqa: E402
from windowrag_pg.parse import ParseError  # noqa: E402
from windowrag_pg.sources import SourceDocument, iter_sources  # noqa: E402
from windowrag_pg.split.sentences import split_units  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
EVAL = Path("/work/shared/eval")
DIM = 384
SENTENCES_PER_DOC = 50
SENTENCES_PER_SECTION = 10

SERVER_SETTINGS = {
    "shared_buffers": "4GB",
    "effective_cache_size": "12GB",
    "work_mem": "64MB",
    "maintenance_work_mem": "4GB",
    "max_parallel_maintenance_workers": "1",
    "max_wal_size": "16GB",
    "checkpoint_timeout": "30min",
}

RELATIONS = [  # (label, regclass, what to measure)
    ("sentences heap (incl. TOAST, FSM, VM)", "windowrag.sentences", "table"),
    ("sentences pkey (btree)", "windowrag.sentences_pkey", "rel"),
    ("sentences_document_ordinal (btree)", "windowrag.sentences_document_ordinal", "rel"),
    ("sentences_section_ordinal (btree)", "windowrag.sentences_section_ordinal", "rel"),
    ("sentences_collection (btree)", "windowrag.sentences_collection", "rel"),
    ("sentences_tsv_gin (GIN)", "windowrag.sentences_tsv_gin", "rel"),
    ("bm25_postings heap", "windowrag.bm25_postings", "table"),
    ("bm25_postings pkey (btree)", "windowrag.bm25_postings_pkey", "rel"),
    ("bm25_postings_impact (btree)", "windowrag.bm25_postings_impact", "rel"),
    ("bm25_terms heap + pkey", "windowrag.bm25_terms", "total"),
    ("documents (heap + TOAST + indexes)", "windowrag.documents", "total"),
    ("sections (heap + indexes)", "windowrag.sections", "total"),
]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q / 100 * (len(ordered) - 1)))))]


# ---------------------------------------------------------------- real units and their vectors

def split_source_documents(path: Path, every: int) -> list[tuple[SourceDocument, list[str]]]:
    """Every EVERY-th document of PATH with its unit texts, as windowrag_pg splits it (documents
    without a unit left out)."""
    documents = []
    sources = [s for s in iter_sources([path]) if isinstance(s, SourceDocument)][::every]
    for source in sources:
        try:
            units = split_units(parse_source(source))
        except ParseError:
            continue
        if units:
            documents.append((source, [u.text for u in units]))
    return documents


def split_source_file(path: Path, every: int) -> list[str]:
    return [text for _, texts in split_source_documents(path, every) for text in texts]


def cached_units(name: str, path: Path, every: int, embedder, *, texts: list[str] | None = None
                 ) -> tuple[list[str], np.ndarray]:
    """The unit texts of every EVERY-th document of PATH as the library splits them now (or TEXTS,
    when the caller has split them already) and their vectors, embedded once and cached in
    benchmarks/out/units_NAME.*; a cache of other texts (the splitter changed) is embedded again."""
    if texts is None:
        texts = split_source_file(path, every)
    vec_file, text_file = OUT / f"units_{name}.npy", OUT / f"units_{name}.jsonl"
    if vec_file.exists() and text_file.exists():
        cached = [json.loads(line)["text"] for line in text_file.open()]
        vectors = np.load(vec_file)
        if cached == texts and len(vectors) == len(texts):
            log(f"{name}: {len(texts)} cached units ({vec_file})")
            return texts, vectors
        log(f"{name}: the cached units are not what the library splits now ({len(cached)} against {len(texts)})")
    log(f"{name}: embedding {len(texts)} units")
    bar = tqdm(total=len(texts), desc=f"embed {name}", unit="text")
    vectors = embedder.embed_documents(texts, batch_size=32, progress=bar.update)
    bar.close()
    np.save(vec_file, vectors)
    with text_file.open("w") as fh:
        for text in texts:
            fh.write(json.dumps({"text": text}) + "\n")
    return texts, vectors


def load_queries(embedder, count: int, seed: int) -> tuple[list[str], np.ndarray]:
    questions = [json.loads(line)["query"] for line in (EVAL / "squad-dev" / "queries.jsonl").open()]
    rng = random.Random(seed)
    chosen = rng.sample(questions, count)
    cache = OUT / f"squad_queries_{count}_{seed}.npy"
    if cache.exists():
        vectors = np.load(cache)
    else:
        vectors = np.stack([embedder.embed_query(q) for q in tqdm(chosen, desc="embed queries")])
        np.save(cache, vectors)
    return chosen, vectors


# ---------------------------------------------------------------- server

def configure_server(home: Path) -> str:
    url = start_embedded(home)
    with psycopg.connect(url, autocommit=True) as conn:
        current = {k: conn.execute(f"SHOW {k}").fetchone()[0] for k in SERVER_SETTINGS}
        if current != SERVER_SETTINGS:
            for key, value in SERVER_SETTINGS.items():
                conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(key), sql.Literal(value)))
            restart = True
        else:
            restart = False
    if restart:
        log("restarting the server with the benchmark settings")
        stop_embedded(home, timeout=120)
        url = start_embedded(home)
    return url


def settings_table(conn) -> list[str]:
    keys = list(SERVER_SETTINGS) + ["random_page_cost", "jit", "max_parallel_workers_per_gather",
                                    "shared_preload_libraries"]
    lines = ["| setting | value |", "|---|---|"]
    for key in keys:
        lines.append(f"| {key} | {conn.execute(f'SHOW {key}').fetchone()[0]} |")
    version = conn.execute("SELECT version()").fetchone()[0].split(",")[0]
    pgvector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    lines.append(f"| server | {version}, pgvector {pgvector} |")
    return lines


# ---------------------------------------------------------------- building a collection

def make_vectors(base: np.ndarray, size: int, noise: float, seed: int,
                 source: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row i copies real unit source[i] (default: a new permutation of the units per pass); rows
    past the first len(base) get noise. A given SOURCE must hold every unit once in its first pass."""
    rng = np.random.default_rng(seed)
    n0 = len(base)
    if source is None:
        passes = -(-size // n0)
        source = np.concatenate([rng.permutation(n0) for _ in range(passes)])[:size]
    vectors = np.empty((size, base.shape[1]), dtype=np.float32)
    for start in range(0, size, 50_000):
        stop = min(size, start + 50_000)
        block = base[source[start:stop]].copy()
        copy_rows = np.arange(start, stop) >= n0
        if copy_rows.any():
            block[copy_rows] += rng.normal(0.0, noise, size=(int(copy_rows.sum()), base.shape[1])).astype(np.float32)
            block[copy_rows] /= np.linalg.norm(block[copy_rows], axis=1, keepdims=True)
        vectors[start:stop] = block
    return source, vectors


def relation_sizes(conn) -> dict[str, int]:
    sizes = {}
    for label, rel, what in RELATIONS:
        fn = {"table": "pg_table_size", "rel": "pg_relation_size", "total": "pg_total_relation_size"}[what]
        sizes[label] = conn.execute(f"SELECT {fn}(%s::regclass)", [rel]).fetchone()[0]
    return sizes


def collection_row(conn, name: str):
    return conn.execute("SELECT id FROM windowrag.collections WHERE name = %s", [name]).fetchone()


def build_collection(conn, name: str, texts: list[str], tokens: list[int], source: np.ndarray,
                     vectors: np.ndarray, batch: int) -> dict:
    size = len(source)
    info: dict = {}
    cid = conn.execute(
        "INSERT INTO windowrag.collections (name, embedding_model, dimension) VALUES (%s, %s, %s) RETURNING id",
        [name, "onnx:bge-small-en-v1.5-int8", DIM]).fetchone()[0]
    conn.execute("VACUUM ANALYZE windowrag.sentences, windowrag.bm25_postings, windowrag.bm25_terms")
    before = relation_sizes(conn)
    doc_base = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM windowrag.documents").fetchone()[0]
    sec_base = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM windowrag.sections").fetchone()[0]
    sent_base = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM windowrag.sentences").fetchone()[0]
    n_docs = -(-size // SENTENCES_PER_DOC)
    started = time.perf_counter()
    conn.execute("SET synchronous_commit = off")
    conn.execute("DROP TABLE IF EXISTS bench_stage")
    conn.execute("""CREATE UNLOGGED TABLE bench_stage (
        id bigint, document_id bigint, section_id bigint, ordinal int, start_char int, end_char int,
        text text, token_count int, embedding vector)""")
    section_rows = []
    with conn.transaction():
        with conn.cursor().copy("COPY windowrag.documents (id, collection_id, external_id, title, source, format, "
                                "content_hash, text, sentence_count) FROM STDIN") as cp_doc:
            for d in tqdm(range(n_docs), desc=f"{name}: documents", unit="doc", mininterval=2):
                rows = source[d * SENTENCES_PER_DOC:(d + 1) * SENTENCES_PER_DOC]
                parts, offsets, pos = [], [], 0
                for j in rows:
                    t = texts[j]
                    offsets.append((pos, pos + len(t)))
                    parts.append(t)
                    pos += len(t) + 1
                doc_id = doc_base + d
                cp_doc.write_row((doc_id, cid, f"synthetic-{size}-{d}", f"Synthetic document {d}", "benchmark",
                                  "text", f"h{d}", " ".join(parts), len(rows)))
                for s in range(0, len(rows), SENTENCES_PER_SECTION):
                    last = min(len(rows), s + SENTENCES_PER_SECTION) - 1
                    sec_id = sec_base + d * (SENTENCES_PER_DOC // SENTENCES_PER_SECTION) + s // SENTENCES_PER_SECTION
                    section_rows.append((sec_id, doc_id, s // SENTENCES_PER_SECTION,
                                         [f"Synthetic document {d}", f"Part {s // SENTENCES_PER_SECTION + 1}"], 2,
                                         offsets[s][0], offsets[last][1], s, last))
        with conn.cursor().copy("COPY windowrag.sections (id, document_id, ordinal, heading_path, level, "
                                "start_char, end_char, first_sentence, last_sentence) FROM STDIN") as cp_sec:
            for r in section_rows:
                cp_sec.write_row(r)
    with conn.transaction():
        with conn.cursor().copy("COPY bench_stage FROM STDIN WITH (FORMAT BINARY)") as cp:
            cp.set_types(["int8", "int8", "int8", "int4", "int4", "int4", "text", "int4", "vector"])
            pos = 0
            for i in tqdm(range(size), desc=f"{name}: COPY stage", unit="row", mininterval=2):
                d, o = divmod(i, SENTENCES_PER_DOC)
                if o == 0:
                    pos = 0
                t = texts[source[i]]
                sec_id = sec_base + d * (SENTENCES_PER_DOC // SENTENCES_PER_SECTION) + o // SENTENCES_PER_SECTION
                cp.write_row((sent_base + i, doc_base + d, sec_id, o, pos, pos + len(t), t,
                              tokens[source[i]], vectors[i]))
                pos += len(t) + 1
    info["copy_seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    for start in tqdm(range(0, size, batch), desc=f"{name}: INSERT into sentences ({batch}/statement)"):
        conn.execute(
            """INSERT INTO windowrag.sentences (id, collection_id, document_id, section_id, ordinal, start_char,
                   end_char, kind, text, token_count, embedding, tsv, bm25_length)
               SELECT st.id, %(cid)s, st.document_id, st.section_id, st.ordinal, st.start_char, st.end_char,
                      'sentence', st.text, st.token_count, st.embedding, v.tsv,
                      (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(v.tsv) u)
               FROM bench_stage st
               CROSS JOIN LATERAL (SELECT to_tsvector('english'::regconfig, st.text) AS tsv) v
               WHERE st.id >= %(lo)s AND st.id < %(hi)s ORDER BY st.id""",
            {"cid": cid, "lo": sent_base + start, "hi": sent_base + min(size, start + batch)})
    info["insert_seconds"] = time.perf_counter() - started
    conn.execute("DROP TABLE bench_stage")
    for seq, table in (("documents_id_seq", "documents"), ("sections_id_seq", "sections"),
                       ("sentences_id_seq", "sentences")):
        conn.execute(f"SELECT setval('windowrag.{seq}', (SELECT max(id) FROM windowrag.{table}))")
    started = time.perf_counter()
    conn.execute("VACUUM ANALYZE windowrag.sentences, windowrag.bm25_postings, windowrag.bm25_terms, "
                 "windowrag.documents, windowrag.sections")
    info["vacuum_seconds"] = time.perf_counter() - started
    after = relation_sizes(conn)
    info["sizes"] = {k: after[k] - before[k] for k in after}
    info["postings"] = conn.execute("SELECT count(*) FROM windowrag.bm25_postings WHERE collection_id = %s",
                                    [cid]).fetchone()[0]
    return info


def build_hnsw(conn, name: str) -> tuple[float, int]:
    """The collection's vector index built as the library builds it after a bulk load (its BM25
    postings packed first, the index centred on the rows): seconds of both, and the index's bytes."""
    collection = get_collection(conn, name)
    started = time.perf_counter()
    build_collection_index(conn, collection)
    seconds = time.perf_counter() - started
    return seconds, conn.execute("SELECT pg_relation_size(%s::regclass)",
                                 [f"windowrag.{collection_index_name(collection)}"]).fetchone()[0]


# ---------------------------------------------------------------- latency

MODES = {
    "dense": "SELECT sentence_id FROM windowrag.dense_search(%(c)s, %(e)s, 50)",
    "bm25": "SELECT sentence_id FROM windowrag.bm25_search(%(c)s, %(q)s, 50)",
    "hybrid": "SELECT sentence_id FROM windowrag.hybrid_search(%(c)s, %(q)s, %(e)s, 50)",
    "hybrid + windows": "SELECT segment_rank, text FROM windowrag.search_windows(%(c)s, %(q)s, %(e)s, "
                        "k => 5, window_size => 3)",
}


def time_statement(conn, statement: str, params_list: list[dict], warmup: int, desc: str) -> list[float]:
    for params in params_list[:warmup]:
        conn.execute(statement, params, prepare=False).fetchall()
    times = []
    for params in tqdm(params_list[warmup:], desc=desc, leave=False):
        started = time.perf_counter()
        conn.execute(statement, params, prepare=False).fetchall()
        times.append((time.perf_counter() - started) * 1000)
    return times


def latency_row(label: str, times: list[float]) -> str:
    return (f"| {label} | {len(times)} | {pct(times, 50):.1f} | {pct(times, 95):.1f} | {pct(times, 99):.1f} "
            f"| {statistics.fmean(times):.1f} |")


# ---------------------------------------------------------------- BM25 variants

BM25_VARIANT_TEMPLATE = """
CREATE OR REPLACE FUNCTION bench.{name}(collection text, query_text text, n integer DEFAULT 50,
    per_term_limit integer DEFAULT 1000, k1 float8 DEFAULT 1.2, b float8 DEFAULT 0.75)
RETURNS TABLE (sentence_id bigint, score float8) LANGUAGE plpgsql STABLE AS $fn$
#variable_conflict use_column
DECLARE
    cid integer := windowrag.collection_id(collection);
    config regconfig;
    lexemes text[];
    n_sentences float8;
    avg_length float8;
BEGIN
    SELECT c.ts_config INTO config FROM windowrag.collections c WHERE c.id = cid;
    lexemes := windowrag.query_lexemes(config, query_text);
    SELECT s.n_sentences, s.total_length::float8 / nullif(s.n_sentences, 0)
      INTO n_sentences, avg_length FROM windowrag.bm25_stats s WHERE s.collection_id = cid;
    IF cardinality(lexemes) = 0 OR coalesce(n_sentences, 0) = 0 OR n <= 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH q AS (
        SELECT t.lexeme, t.df, ln(1 + (n_sentences - t.df + 0.5) / (t.df + 0.5)) AS idf
        FROM windowrag.bm25_terms t
        WHERE t.collection_id = cid AND t.lexeme = ANY (lexemes)
    ){body}
    SELECT sc.sentence_id, sc.score FROM scored sc ORDER BY sc.score DESC, sc.sentence_id LIMIT n;
END $fn$;
"""

BM25_VARIANTS = {
    # ground truth: every posting of every query term, summed (no candidate limit)
    "exhaustive": """, scored AS (
        SELECT p.sentence_id, sum(q.idf * windowrag.bm25_term_weight(p.tf, p.doc_length, avg_length, k1, b)) AS score
        FROM q JOIN windowrag.bm25_postings p ON p.collection_id = cid AND p.lexeme = q.lexeme
        GROUP BY p.sentence_id)""",
    # the shipped design, copied: top-L per term, then one PK probe per (candidate, term)
    "current": """, candidates AS (
        SELECT DISTINCT top.sentence_id FROM q CROSS JOIN LATERAL (
            SELECT p.sentence_id FROM windowrag.bm25_postings p
            WHERE p.collection_id = cid AND p.lexeme = q.lexeme ORDER BY p.impact DESC LIMIT per_term_limit) top
    ), scored AS (
        SELECT c.sentence_id, sum(q.idf * windowrag.bm25_term_weight(p.tf, p.doc_length, avg_length, k1, b)) AS score
        FROM candidates c CROSS JOIN q
        JOIN windowrag.bm25_postings p ON p.collection_id = cid AND p.lexeme = q.lexeme AND p.sentence_id = c.sentence_id
        GROUP BY c.sentence_id)""",
    # same candidates; exact re-scoring from the sentence's own tsvector (one heap fetch per candidate)
    "tsv_rescore": """, candidates AS (
        SELECT DISTINCT top.sentence_id FROM q CROSS JOIN LATERAL (
            SELECT p.sentence_id FROM windowrag.bm25_postings p
            WHERE p.collection_id = cid AND p.lexeme = q.lexeme ORDER BY p.impact DESC LIMIT per_term_limit) top
    ), scored AS (
        SELECT s.id AS sentence_id,
               sum(q.idf * windowrag.bm25_term_weight(cardinality(u.positions), s.bm25_length, avg_length, k1, b)) AS score
        FROM candidates c JOIN windowrag.sentences s ON s.id = c.sentence_id
        CROSS JOIN LATERAL unnest(s.tsv) u JOIN q ON q.lexeme = u.lexeme
        GROUP BY s.id)""",
    # per-term lists read with tf/doc_length (index-only on the impact index); terms whose list is
    # complete (df <= limit) are scored from the lists; only incomplete terms are probed
    "lists_probe_incomplete": """, top AS (
        SELECT q.lexeme, q.idf, q.df, t.sentence_id, t.tf, t.doc_length FROM q CROSS JOIN LATERAL (
            SELECT p.sentence_id, p.tf, p.doc_length FROM windowrag.bm25_postings p
            WHERE p.collection_id = cid AND p.lexeme = q.lexeme ORDER BY p.impact DESC LIMIT per_term_limit) t
    ), candidates AS (SELECT DISTINCT top.sentence_id FROM top
    ), contributions AS (
        SELECT top.sentence_id, top.idf * windowrag.bm25_term_weight(top.tf, top.doc_length, avg_length, k1, b) AS w
        FROM top WHERE top.df <= per_term_limit
        UNION ALL
        SELECT c.sentence_id, q.idf * windowrag.bm25_term_weight(p.tf, p.doc_length, avg_length, k1, b)
        FROM candidates c CROSS JOIN q
        JOIN windowrag.bm25_postings p ON p.collection_id = cid AND p.lexeme = q.lexeme AND p.sentence_id = c.sentence_id
        WHERE q.df > per_term_limit
    ), scored AS (SELECT sentence_id, sum(w) AS score FROM contributions GROUP BY sentence_id)""",
    # lists with tf/doc_length; when every query term's list is complete (df <= limit) the lists
    # hold every posting and the candidates are scored from them alone; otherwise every candidate
    # is re-scored exactly from its tsvector (one heap fetch per candidate instead of one probe
    # per candidate and term). The unused branch is skipped by a one-time filter.
    "lists_or_tsv": """, top AS (
        SELECT q.lexeme, q.idf, t.sentence_id, t.tf, t.doc_length FROM q CROSS JOIN LATERAL (
            SELECT p.sentence_id, p.tf, p.doc_length FROM windowrag.bm25_postings p
            WHERE p.collection_id = cid AND p.lexeme = q.lexeme ORDER BY p.impact DESC LIMIT per_term_limit) t
    ), scored AS (
        SELECT top.sentence_id, sum(top.idf * windowrag.bm25_term_weight(top.tf, top.doc_length, avg_length, k1, b)) AS score
        FROM top WHERE NOT EXISTS (SELECT 1 FROM q WHERE q.df > per_term_limit)
        GROUP BY top.sentence_id
        UNION ALL
        SELECT s.id, sum(q.idf * windowrag.bm25_term_weight(cardinality(u.positions), s.bm25_length, avg_length, k1, b))
        FROM (SELECT DISTINCT top.sentence_id FROM top) c JOIN windowrag.sentences s ON s.id = c.sentence_id
        CROSS JOIN LATERAL unnest(s.tsv) u JOIN q ON q.lexeme = u.lexeme
        WHERE EXISTS (SELECT 1 FROM q WHERE q.df > per_term_limit)
        GROUP BY s.id)""",
    # tsv re-scoring, per-term limit proportional to idf / max idf (at least 50)
    "tsv_rescore_idf_limit": """, ql AS (
        SELECT q.*, greatest(50, ceil(per_term_limit * q.idf / max(q.idf) OVER ()))::int AS lim FROM q
    ), candidates AS (
        SELECT DISTINCT top.sentence_id FROM ql CROSS JOIN LATERAL (
            SELECT p.sentence_id FROM windowrag.bm25_postings p
            WHERE p.collection_id = cid AND p.lexeme = ql.lexeme ORDER BY p.impact DESC LIMIT ql.lim) top
    ), scored AS (
        SELECT s.id AS sentence_id,
               sum(q.idf * windowrag.bm25_term_weight(cardinality(u.positions), s.bm25_length, avg_length, k1, b)) AS score
        FROM candidates c JOIN windowrag.sentences s ON s.id = c.sentence_id
        CROSS JOIN LATERAL unnest(s.tsv) u JOIN q ON q.lexeme = u.lexeme
        GROUP BY s.id)""",
}

# (label, variant, per_term_limit)
BM25_RUNS = [
    ("current, L=1000 (shipped)", "current", 1000),
    ("current, L=300", "current", 300),
    ("lists + probe incomplete terms, L=1000", "lists_probe_incomplete", 1000),
    ("tsv re-scoring, L=1000", "tsv_rescore", 1000),
    ("lists if all complete, else tsv re-scoring, L=1000", "lists_or_tsv", 1000),
    ("lists if all complete, else tsv re-scoring, L=300", "lists_or_tsv", 300),
    ("tsv re-scoring, L=300", "tsv_rescore", 300),
    ("tsv re-scoring, L=100", "tsv_rescore", 100),
    ("tsv re-scoring, L=1000·idf/max idf", "tsv_rescore_idf_limit", 1000),
    ("tsv re-scoring, L=300·idf/max idf", "tsv_rescore_idf_limit", 300),
]


def install_bm25_variants(conn) -> None:
    conn.execute("CREATE SCHEMA IF NOT EXISTS bench")
    for name, body in BM25_VARIANTS.items():
        conn.execute(BM25_VARIANT_TEMPLATE.format(name=name, body=body))


def tie_aware_overlap(result: list[tuple[int, float]], truth: list[tuple[int, float]], k: int = 50) -> float:
    """Share of the variant's top k whose exact score reaches the k-th exhaustive score (ties count)."""
    if not truth:
        return 1.0
    truth = truth[:k]
    threshold = truth[-1][1] - 1e-9
    good = sum(1 for _, score in result[:k] if score >= threshold)
    return min(good, len(truth)) / len(truth)


def bm25_study(conn, name: str, queries: list[str], warmup: int) -> list[str]:
    install_bm25_variants(conn)
    truth_sql = "SELECT sentence_id, score FROM bench.exhaustive(%(c)s, %(q)s, 50)"
    truths, exhaustive_times = [], []
    for q in queries[:warmup]:
        conn.execute(truth_sql, {"c": name, "q": q}, prepare=False).fetchall()
    for q in tqdm(queries[warmup:], desc="bm25 exhaustive", leave=False):
        started = time.perf_counter()
        truths.append(conn.execute(truth_sql, {"c": name, "q": q}, prepare=False).fetchall())
        exhaustive_times.append((time.perf_counter() - started) * 1000)
    lines = ["| variant | p50 ms | p95 ms | mean ms | overlap@50 (tie-aware) | exact id overlap@50 |",
             "|---|---:|---:|---:|---:|---:|",
             f"| exhaustive (all postings of the query terms) | {pct(exhaustive_times, 50):.1f} | "
             f"{pct(exhaustive_times, 95):.1f} | {statistics.fmean(exhaustive_times):.1f} | 1.000 | 1.000 |"]
    for label, variant, limit in BM25_RUNS:
        statement = f"SELECT sentence_id, score FROM bench.{variant}(%(c)s, %(q)s, 50, %(l)s)"
        for q in queries[:warmup]:
            conn.execute(statement, {"c": name, "q": q, "l": limit}, prepare=False).fetchall()
        times, overlaps, id_overlaps = [], [], []
        for q, truth in tqdm(list(zip(queries[warmup:], truths)), desc=f"bm25 {label}", leave=False):
            started = time.perf_counter()
            rows = conn.execute(statement, {"c": name, "q": q, "l": limit}, prepare=False).fetchall()
            times.append((time.perf_counter() - started) * 1000)
            overlaps.append(tie_aware_overlap(rows, truth))
            id_overlaps.append(len({r[0] for r in rows} & {t[0] for t in truth}) / max(1, len(truth)))
        lines.append(f"| {label} | {pct(times, 50):.1f} | {pct(times, 95):.1f} | {statistics.fmean(times):.1f} | "
                     f"{statistics.fmean(overlaps):.3f} | {statistics.fmean(id_overlaps):.3f} |")
    return lines


# ---------------------------------------------------------------- dense ef_search sweep

def dense_study(conn, name: str, first_id: int, vectors: np.ndarray, qvecs: np.ndarray, warmup: int,
                efs: list[int]) -> list[str]:
    measured = qvecs[warmup:]
    truth = []
    for start in range(0, len(measured), 50):
        sims = measured[start:start + 50] @ vectors.T
        top = np.argpartition(-sims, 10, axis=1)[:, :10]
        truth.extend(set((first_id + row).tolist()) for row in top)
    lines = ["| ef_search | p50 ms | p95 ms | recall@10 vs exact |", "|---:|---:|---:|---:|"]
    statement = "SELECT sentence_id FROM windowrag.dense_search(%(c)s, %(e)s, 10, NULL, %(ef)s)"
    for ef in efs:
        for e in qvecs[:warmup]:
            conn.execute(statement, {"c": name, "e": e, "ef": ef}, prepare=False).fetchall()
        times, recalls = [], []
        for e, t in tqdm(list(zip(measured, truth)), desc=f"dense ef={ef}", leave=False):
            started = time.perf_counter()
            rows = conn.execute(statement, {"c": name, "e": e, "ef": ef}, prepare=False).fetchall()
            times.append((time.perf_counter() - started) * 1000)
            recalls.append(len({r[0] for r in rows} & t) / 10)
        lines.append(f"| {ef} | {pct(times, 50):.1f} | {pct(times, 95):.1f} | {statistics.fmean(recalls):.3f} |")
    return lines


# ---------------------------------------------------------------- EXPLAIN

def vector_literal(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


def explain(conn, statement: str, keep: int = 40) -> str:
    rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + statement, prepare=False).fetchall()
    lines = [re.sub(r"'\[[-0-9.e,]+\]'", "'<vector>'", r[0]) for r in rows]
    if len(lines) > keep:
        lines = lines[:keep] + [f"... ({len(rows) - keep} more lines)"]
    return "\n".join(lines)


def explain_section(conn, name: str, cid: int, query: str, qvec: np.ndarray, pgdata: Path) -> list[str]:
    lexemes = conn.execute("SELECT windowrag.query_lexemes('english', %s)", [query]).fetchone()[0]
    n_sent, avgdl = conn.execute("SELECT n_sentences, total_length::float8 / n_sentences FROM windowrag.bm25_stats "
                                 "WHERE collection_id = %s", [cid]).fetchone()
    vec = vector_literal(qvec)
    docs = [r[0] for r in conn.execute("SELECT id FROM windowrag.documents WHERE collection_id = %s ORDER BY id "
                                       "LIMIT 20", [cid]).fetchall()]
    doc_arr = "ARRAY[" + ",".join(map(str, docs)) + "]::bigint[]"
    out = [f"Query: `{query}` → lexemes {lexemes}; collection {name} (id {cid}), N = {n_sent}, "
           f"avgdl = {avgdl:.3f}.", ""]
    gin = f"""SELECT s.id FROM windowrag.sentences s
WHERE s.collection_id = {cid} AND s.document_id = ANY ({doc_arr})
  AND s.tsv @@ replace(plainto_tsquery('english', '{query.replace("'", "''")}')::text, ' & ', ' | ')::tsquery"""
    windows = f"""SELECT h.sentence_id, s.ordinal, sec.first_sentence, sec.last_sentence, d.sentence_count
FROM windowrag.hybrid_search('{name}', '{query.replace("'", "''")}', '{vec}'::vector, 50) h
JOIN windowrag.sentences s ON s.id = h.sentence_id
JOIN windowrag.sections sec ON sec.id = s.section_id
JOIN windowrag.documents d ON d.id = s.document_id ORDER BY h.rank"""
    ordinal = f"""SELECT d.external_id, a.start_char, z.end_char
FROM windowrag.documents d
JOIN windowrag.sentences a ON a.document_id = d.id AND a.ordinal = 7
JOIN windowrag.sentences z ON z.document_id = d.id AND z.ordinal = 13
WHERE d.id = {docs[0]}"""
    # dense_search and bm25_search build their statements at run time (the index's centre, BM25 in
    # C): their plans are the auto_explain of search_windows below, not copies of their text here
    for title, statement in (("BM25 filtered branch, matching sentences (GIN on tsv)", gin),
                             ("search_windows: fused hits joined to sentences/sections/documents (btree PKs)",
                              windows),
                             ("search_windows: window text bounds (btree sentences_document_ordinal)", ordinal)):
        out += [f"**{title}**", "", "```sql", statement.replace(vec, "<384-d query vector>"),
                "```", "", "```", explain(conn, statement), "```", ""]
    # auto_explain for the functions themselves (nested statements, into the server log)
    log_file = pgdata / "log"
    offset = log_file.stat().st_size if log_file.exists() else 0
    conn.execute("LOAD 'auto_explain'")
    for key, value in (("auto_explain.log_min_duration", "0"), ("auto_explain.log_nested_statements", "on"),
                       ("auto_explain.log_analyze", "on"), ("auto_explain.log_buffers", "on"),
                       ("auto_explain.log_timing", "on")):
        conn.execute(f"SET {key} = {value}")
    conn.execute("SELECT * FROM windowrag.search_windows(%s, %s, %s, k => 5, window_size => 3)",
                 [name, query, qvec], prepare=False).fetchall()
    conn.execute("SET auto_explain.log_min_duration = -1")
    time.sleep(0.5)
    if log_file.exists():
        with log_file.open("rb") as fh:
            fh.seek(offset)
            text = fh.read().decode("utf-8", "replace")
        plans = re.findall(r"duration: ([\d.]+) ms\s+plan:\n(.*?)(?=\n\S|\Z)", text, flags=re.S)
        out += ["**auto_explain of one `windowrag.search_windows` call (nested statements, durations in ms)**", "",
                "```"]
        for duration, plan in plans:
            first = plan.strip().splitlines()
            query_line = next((l for l in first if l.strip().startswith("Query Text:")), "")
            node_lines = [l for l in first if "Scan" in l or "Index" in l or "Limit" in l][:8]
            out.append(f"{duration} ms  {query_line.strip()[:150]}")
            out += ["    " + l.strip()[:160] for l in node_lines]
        out += ["```", ""]
    return out


# ---------------------------------------------------------------- main

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=200, help="measured queries per size and mode")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--home", type=Path, default=Path("/tmp/wr-bench"),
                        help="embedded server home of this benchmark (never the default one)")
    parser.add_argument("--noise", type=float, default=0.015)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--batch", type=int, default=10_000, help="rows per INSERT ... SELECT statement")
    parser.add_argument("--handbook-every", type=int, default=16, help="handbook pages used: every N-th (0: none)")
    parser.add_argument("--contractnli-every", type=int, default=0, help="ContractNLI contracts used: every N-th (0: none)")
    parser.add_argument("--name-prefix", default="bench",
                        help="collections are PREFIX_SIZE; use another prefix for another base corpus")
    parser.add_argument("--study-queries", type=int, default=100, help="queries for the BM25 / ef_search studies")
    parser.add_argument("--ef", type=int, nargs="+", default=[40, 64, 100, 200, 400])
    parser.add_argument("--no-studies", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT / "query.md")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)

    report = ["## Query latency", "", f"- command: `python benchmarks/query.py {' '.join(sys.argv[1:])}`",
              f"- machine: {os.cpu_count()} cores, "
              f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB RAM; load at start: `{uptime()}`"]
    embedder = get_embedder()
    squad_texts, squad_vecs = cached_units("squad", EVAL / "squad-dev" / "documents.jsonl", 1, embedder)
    hb_texts, hb_vecs = ([], np.zeros((0, DIM), np.float32)) if args.handbook_every == 0 else cached_units(f"handbook_every{args.handbook_every}", EVAL / "handbook" / "documents.jsonl",
                                     args.handbook_every, embedder)
    cn_texts, cn_vecs = ([], np.zeros((0, DIM), np.float32)) if args.contractnli_every == 0 else cached_units(
        f"contractnli_every{args.contractnli_every}", EVAL / "contractnli-dev" / "documents.jsonl",
        args.contractnli_every, embedder)
    texts = squad_texts + hb_texts + cn_texts
    base = np.concatenate([squad_vecs, hb_vecs, cn_vecs]).astype(np.float32)
    tokens = embedder.count_tokens(texts)
    queries, qvecs = load_queries(embedder, args.queries + args.warmup, args.seed)
    report.append(f"- real units: {len(squad_texts)} squad-dev + {len(hb_texts)} handbook + {len(cn_texts)} "
                  f"ContractNLI = {len(texts)} "
                  f"({len(set(texts))} distinct texts); queries: {len(queries)} SQuAD dev questions "
                  f"({args.warmup} warm-up + {args.queries} measured), seed {args.seed}; noise sigma {args.noise}")
    url = configure_server(args.home)
    conn = connect(url, autocommit=True)
    conn.execute("SET statement_timeout = 0")
    report += ["", "Server settings (ALTER SYSTEM in the benchmark's own server, then restart):", ""]
    report += settings_table(conn)
    pgdata = args.home / "pgdata"

    build_lines = ["| size | rows COPY to stage s | INSERT…SELECT (triggers) s | VACUUM ANALYZE s | BM25 pack + HNSW build s | "
                   "postings rows |", "|---:|---:|---:|---:|---:|---:|"]
    size_lines: dict[int, dict] = {}
    latency_lines = ["| size | mode | queries | p50 ms | p95 ms | p99 ms | mean ms |", "|---:|---|---:|---:|---:|---:|---:|"]
    studies: list[str] = []
    explains: list[str] = []
    for size in args.sizes:
        name = f"{args.name_prefix}_{size}"
        source, vectors = make_vectors(base, size, args.noise, args.seed + size)
        row = collection_row(conn, name)
        if row is not None:
            cid = row[0]
            count = conn.execute("SELECT count(*) FROM windowrag.sentences WHERE collection_id = %s", [cid]).fetchone()[0]
            if count != size:
                sys.exit(f"collection {name} exists with {count} rows: drop it or use a fresh --home")
            log(f"{name}: reusing the loaded collection (build times and sizes not re-measured)")
            info = None
        else:
            log(f"{name}: loading {size} rows; load: {uptime()}")
            info = build_collection(conn, name, texts, tokens, source, vectors, args.batch)
            cid = collection_row(conn, name)[0]
        index_name = f"windowrag.{collection_index_name(get_collection(conn, name))}"
        if conn.execute("SELECT to_regclass(%s)", [index_name]).fetchone()[0] is None:
            log(f"{name}: building HNSW; load: {uptime()}")
            hnsw_seconds, hnsw_bytes = build_hnsw(conn, name)
            log(f"{name}: HNSW built in {hnsw_seconds:.0f} s")
        else:
            hnsw_seconds, hnsw_bytes = None, conn.execute("SELECT pg_relation_size(%s::regclass)",
                                                          [index_name]).fetchone()[0]
        first_id = conn.execute("SELECT min(id) FROM windowrag.sentences WHERE collection_id = %s", [cid]).fetchone()[0]
        if info:
            build_lines.append(f"| {size:,} | {info['copy_seconds']:.0f} | {info['insert_seconds']:.0f} | "
                               f"{info['vacuum_seconds']:.0f} | {hnsw_seconds:.0f} | {info['postings']:,} |")
            size_lines[size] = dict(info["sizes"], **{"HNSW (per-collection partial index)": hnsw_bytes})
        load_now = uptime()
        log(f"{name}: latency; load: {load_now}")
        for mode, statement in MODES.items():
            params = [{"c": name, "q": q, "e": e} for q, e in zip(queries, qvecs)]
            times = time_statement(conn, statement, params, args.warmup, f"{name} {mode}")
            latency_lines.append(latency_row(f"{size:,} | {mode}", times))
            log(latency_lines[-1])
        latency_lines.append(f"| {size:,} | (load during this size: `{load_now.split('load average:')[-1].strip()}`) | | | | | |")
        explains += [f"### EXPLAIN at {size:,} sentences", ""]
        explains += explain_section(conn, name, cid, queries[args.warmup], qvecs[args.warmup], pgdata)
        if not args.no_studies and size == max(args.sizes):
            sq = queries[:args.warmup + args.study_queries]
            log(f"{name}: BM25 variants; load: {uptime()}")
            studies += [f"### BM25 candidate strategies at {size:,} sentences ({args.study_queries} queries)", ""]
            studies += bm25_study(conn, name, sq, args.warmup)
            log(f"{name}: dense ef_search sweep; load: {uptime()}")
            studies += ["", f"### Dense: ef_search vs recall@10 at {size:,} sentences ({args.study_queries} queries; "
                        "exact top-10 by numpy over the same vectors)", ""]
            studies += dense_study(conn, name, first_id, vectors, qvecs[:args.warmup + args.study_queries],
                                   args.warmup, args.ef)
            studies.append(f"\n(load after studies: `{uptime()}`)")
        del vectors
        partial = "\n".join(report + ["", "### Latency so far", ""] + latency_lines) + "\n"
        (OUT / "query.partial.md").write_text(partial)

    report += ["", "### Build", ""] + build_lines
    if size_lines:
        sizes_sorted = sorted(size_lines)
        report += ["", "### On-disk bytes per sentence (growth of each relation while loading that collection, "
                   "after VACUUM, divided by its rows)", "",
                   "| relation | " + " | ".join(f"{s:,}" for s in sizes_sorted) + " |",
                   "|---|" + "---:|" * len(sizes_sorted)]
        labels = list(next(iter(size_lines.values())))
        for label in labels + ["total"]:
            cells = []
            for s in sizes_sorted:
                value = sum(size_lines[s].values()) if label == "total" else size_lines[s][label]
                cells.append(f"{value / s:,.0f}")
            report.append(f"| {label} | " + " | ".join(cells) + " |")
    report += ["", "### Latency (ms, query embedding excluded, prepare=False)", ""] + latency_lines
    report += [""] + studies + [""] + explains
    report.append(f"\nload at the end: `{uptime()}`")
    text = "\n".join(report) + "\n"
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
