"""Compact BM25 (migration 0011): postings packed in impact-ordered blocks, rows for what was
written since the last pack; the same exact scores either way (rank-bm25 itself is compared in
test_retrieval.py, on a collection packed by its bulk load)."""
from __future__ import annotations

import pytest

from windowrag_pg.db import connection as db
from windowrag_pg.db.sqlfiles import load_sql
from windowrag_pg.doctor import repair_bm25, run_checks
from windowrag_pg.ingest import Ingestor
from windowrag_pg.sources import SourceDocument, iter_sources
from windowrag_pg.store.bm25 import pack_counts, pack_due, pack_if_due, pack_kind, pack_recent, rebuild_bm25
from windowrag_pg.store.collections import get_collection
from windowrag_pg.store.writer import delete_document

from .conftest import scratch_database

QUERIES = ["harbour crane", "crane inspection", "river barge cargo", "weekly report", "cargo"]


def port_documents(count: int, prefix: str = "port") -> list[SourceDocument]:
    """Sentences that share a few common terms (crane: one in every sentence, > 128 postings)."""
    words = ["harbour", "river", "barge", "cargo", "inspection", "weekly", "report", "diesel", "tide"]
    documents = []
    for d in range(count):
        sentences = [f"Crane {d}-{i} moved {words[i % 9]} and {words[(i * d + 3) % 9]} "
                     f"{'cargo ' * (i % 4)}near berth {i}." for i in range(12)]
        documents.append(SourceDocument(external_id=f"{prefix}{d}", format="text", text=" ".join(sentences)))
    return documents


def bm25_results(conn, name: str, *, n: int = 20, **options) -> list[list[tuple[int, float]]]:
    extra = "".join(f", {key} => {int(value)}" for key, value in options.items())
    return [conn.execute(f"SELECT sentence_id, score FROM windowrag.bm25_search(%s, %s, {n}{extra})",
                         [name, query]).fetchall() for query in QUERIES]


# each block of 'crane' with its postings' impacts (the weight at the average length of the pack)
BLOCK_IMPACTS = """
SELECT b.block, b.max_impact,
       array(SELECT windowrag.bm25_term_weight(u.tf, u.length, st.total_length::float8 / st.n_sentences)::real
             FROM unnest(b.tfs, b.lengths) WITH ORDINALITY u (tf, length, i) ORDER BY u.i),
       cardinality(b.sentence_ids)
FROM windowrag.bm25_blocks b JOIN windowrag.bm25_stats st ON st.collection_id = b.collection_id
WHERE b.collection_id = %s AND b.lexeme = 'crane' ORDER BY b.block
"""


def counters(conn, name: str) -> tuple[int, int, int, int]:
    """(as rows, stale, packed, of them in the recent tier)."""
    return pack_counts(conn, get_collection(conn, name))


def mismatches(conn, name: str) -> tuple[int, int, int]:
    return next(tuple(r[1:]) for r in conn.execute(load_sql("bm25_consistency")).fetchall() if r[0] == name)


def test_pack_due_rule():
    assert not pack_due(0, 0, 0)
    assert not pack_due(49_999, 0, 0)
    assert pack_due(50_000, 0, 0) and pack_due(30_000, 20_000, 0)
    assert not pack_due(99_999, 0, 1_000_000) and pack_due(100_000, 0, 1_000_000)
    assert pack_due(10, 10, 100, min_postings=1)


def test_pack_kind_rule():
    assert pack_kind(49_999, 0, 0, 0) is None
    assert pack_kind(50_000, 0, 0, 0) == "full"  # nothing packed yet
    assert pack_kind(100_000, 0, 1_000_000, 0) == "recent"
    assert pack_kind(100_000, 0, 1_000_000, 250_000) == "recent"  # 350,000 < half of 750,000
    assert pack_kind(100_000, 0, 1_000_000, 300_000) == "full"  # 400,000 >= half of 700,000
    assert pack_kind(90_000, 10_000, 1_000_000, 0) == "full"  # stale postings: only a full pack drops them


def main_blocks(conn, collection_id: int) -> list[tuple]:
    return conn.execute("SELECT lexeme, block, sentence_ids FROM windowrag.bm25_blocks WHERE collection_id = %s"
                        " AND block >= 0 ORDER BY 1, 2", [collection_id]).fetchall()


def test_a_recent_pack_rewrites_only_what_was_written_since_the_full_pack(conn, embedder, collection_name):
    """Migration 0021: the rows (and an earlier recent tier) go into blocks -1, -2, ...; the first
    tier stays as it was; every score and the recount hold; deletions in either tier are counted;
    a full pack folds the tier back in."""
    ingest = Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest
    ingest(port_documents(15))
    collection = get_collection(conn, collection_name)
    rebuild_bm25(conn, collection)
    first_tier = main_blocks(conn, collection.id)
    strong = SourceDocument(external_id="strong", format="text",
                            text=" ".join(f"Crane crane crane {i} lifted." for i in range(12)))
    ingest(port_documents(3, prefix="new") + [strong])
    before = bm25_results(conn, collection_name)
    new_postings = conn.execute(
        "SELECT sum(length(s.tsv)) FROM windowrag.sentences s JOIN windowrag.documents d ON d.id = s.document_id"
        " WHERE d.collection_id = %s AND d.external_id IN ('new0', 'new1', 'new2', 'strong')", [collection.id]).fetchone()[0]
    assert pack_recent(conn, collection) == new_postings
    pending, stale, *_ = counters(conn, collection_name)
    assert (pending, stale) == (0, 0) and main_blocks(conn, collection.id) == first_tier
    assert conn.execute("SELECT count(*) FROM windowrag.bm25_blocks WHERE collection_id = %s AND block < 0",
                        [collection.id]).fetchone()[0] > 0
    assert mismatches(conn, collection_name) == (0, 0, 0)
    assert bm25_results(conn, collection_name) == before
    strong_ids = {r[0] for r in conn.execute(
        "SELECT s.id FROM windowrag.sentences s JOIN windowrag.documents d ON d.id = s.document_id"
        " WHERE d.collection_id = %s AND d.external_id = 'strong'", [collection.id]).fetchall()}
    top = conn.execute("SELECT sentence_id FROM windowrag.bm25_search(%s, 'crane', 5, per_term_limit => 10)",
                       [collection_name]).fetchall()
    assert len(top) == 5 and {r[0] for r in top} <= strong_ids  # read from the recent tier

    # more rows, then a deletion in each tier: the counts follow, the results skip them
    ingest(port_documents(2, prefix="later"))
    assert delete_document(conn, collection, "new0") and delete_document(conn, collection, "port1")
    assert mismatches(conn, collection_name) == (0, 0, 0)
    assert counters(conn, collection_name)[1] > 0  # stale packed postings: the next pack is full
    mixed = bm25_results(conn, collection_name)
    rebuild_bm25(conn, collection)
    assert conn.execute("SELECT count(*) FROM windowrag.bm25_blocks WHERE collection_id = %s AND block < 0",
                        [collection.id]).fetchone()[0] == 0
    assert conn.execute("SELECT sum(recent_df) FROM windowrag.bm25_terms WHERE collection_id = %s",
                        [collection.id]).fetchone()[0] == 0
    assert mismatches(conn, collection_name) == (0, 0, 0)
    assert bm25_results(conn, collection_name) == mixed


def test_packing_keeps_every_score_and_the_order_of_impacts(conn, embedder, collection_name):
    report = Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(15))
    assert not report.errors and report.sentences == 180
    pending, stale, packed, _ = counters(conn, collection_name)
    assert pending > 180 and stale == 0 and packed == 0  # below the pack threshold: rows
    before = bm25_results(conn, collection_name)
    cut_before = bm25_results(conn, collection_name, n=5, per_term_limit=10, shortlist_size=20)

    assert rebuild_bm25(conn, get_collection(conn, collection_name)) == pending
    assert counters(conn, collection_name) == (0, 0, pending, 0)
    cid = get_collection(conn, collection_name).id
    assert conn.execute("SELECT count(*) FROM windowrag.bm25_postings WHERE collection_id = %s", [cid]).fetchone()[0] == 0
    assert mismatches(conn, collection_name) == (0, 0, 0)
    assert bm25_results(conn, collection_name) == before
    # cut lists: the candidates may differ (impacts now at the final average length), scores stay exact
    for got, earlier in zip(bm25_results(conn, collection_name, n=5, per_term_limit=10, shortlist_size=20), cut_before):
        assert len(got) == 5 and [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        exact = dict(row for rows in before for row in rows)
        assert all(exact.get(sid, score) == pytest.approx(score) for sid, score in got)

    blocks = conn.execute(BLOCK_IMPACTS, [cid]).fetchall()
    assert [b[0] for b in blocks] == [0, 1] and [b[3] for b in blocks] == [128, 52]  # 180 sentences
    impacts = [i for b in blocks for i in b[2]]
    assert impacts == sorted(impacts, reverse=True) and all(b[1] == b[2][0] for b in blocks)


def test_deleted_sentences_leave_the_results_and_the_next_pack(conn, embedder, collection_name):
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(15))
    collection = get_collection(conn, collection_name)
    rebuild_bm25(conn, collection)
    gone = {r[0] for r in conn.execute(
        "SELECT s.id FROM windowrag.sentences s JOIN windowrag.documents d ON d.id = s.document_id"
        " WHERE d.collection_id = %s AND d.external_id IN ('port0', 'port1')", [collection.id]).fetchall()}
    assert delete_document(conn, collection, "port0") and delete_document(conn, collection, "port1")
    pending, stale, *_ = counters(conn, collection_name)
    assert pending == 0 and stale > 0
    assert mismatches(conn, collection_name) == (0, 0, 0)  # stale packed postings are skipped
    results = bm25_results(conn, collection_name, n=200)
    assert all(sid not in gone for rows in results for sid, _ in rows)
    assert len(results[0]) == 180 - 24  # every remaining 'crane' sentence

    # new rows beside the blocks: read from both; a pack folds them in and drops the stale ones
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(2, prefix="new"))
    pending, stale, *_ = counters(conn, collection_name)
    assert pending > 0 and stale > 0
    mixed = bm25_results(conn, collection_name)
    assert pack_if_due(conn, collection) is False  # far below 50,000 postings
    rebuild_bm25(conn, collection)
    live = conn.execute("SELECT sum(length(tsv)) FROM windowrag.sentences WHERE collection_id = %s",
                        [collection.id]).fetchone()[0]
    assert counters(conn, collection_name) == (0, 0, live, 0)
    assert bm25_results(conn, collection_name) == mixed
    assert mismatches(conn, collection_name) == (0, 0, 0)


def test_a_cut_list_reads_the_rows_of_a_replaced_document(conn, embedder, collection_name):
    """A packed document written again: its new postings are rows while its old ones stay packed
    (stale). packed_df follows (migration 0020), so a cut list still reads the rows' strongest
    postings: the new text's 'crane crane crane' sentences come first."""
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(15))
    collection = get_collection(conn, collection_name)
    rebuild_bm25(conn, collection)
    replaced = SourceDocument(external_id="port3", format="text",
                              text=" ".join(f"Crane crane crane {i} lifted." for i in range(12)))
    report = Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest([replaced])
    assert not report.errors and report.sentences == 12
    assert mismatches(conn, collection_name) == (0, 0, 0)
    df, packed_df = conn.execute("SELECT df, packed_df FROM windowrag.bm25_terms WHERE collection_id = %s"
                                 " AND lexeme = 'crane'", [collection.id]).fetchone()
    assert (df, packed_df) == (180, 168)  # 12 packed postings of the old text are stale
    new_ids = {r[0] for r in conn.execute(
        "SELECT s.id FROM windowrag.sentences s JOIN windowrag.documents d ON d.id = s.document_id"
        " WHERE d.collection_id = %s AND d.external_id = 'port3'", [collection.id]).fetchall()}
    top = conn.execute("SELECT sentence_id FROM windowrag.bm25_search(%s, 'crane', 5, per_term_limit => 10)",
                       [collection_name]).fetchall()
    assert len(top) == 5 and {r[0] for r in top} <= new_ids
    rebuild_bm25(conn, collection)
    assert conn.execute("SELECT df, packed_df FROM windowrag.bm25_terms WHERE collection_id = %s"
                        " AND lexeme = 'crane'", [collection.id]).fetchone() == (180, 180)
    assert mismatches(conn, collection_name) == (0, 0, 0)


def test_a_bulk_write_defers_the_statistics_and_the_rebuild_counts_them(conn, embedder, collection_name):
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(3))
    collection = get_collection(conn, collection_name)
    with conn.transaction():
        conn.execute(load_sql("defer_bm25"))
        conn.execute("DELETE FROM windowrag.documents WHERE collection_id = %s AND external_id = 'port0'",
                     [collection.id])
    assert mismatches(conn, collection_name) != (0, 0, 0)  # the triggers skipped the delete
    conn.execute("SELECT 1")  # the setting was transaction-local: this delete is counted
    assert delete_document(conn, collection, "port1")
    rebuild_bm25(conn, collection)
    assert mismatches(conn, collection_name) == (0, 0, 0)
    assert counters(conn, collection_name)[0] == 0


def test_doctor_reports_posting_rows_due_and_fix_packs_them(conn, embedder, collection_name):
    """A tenant role's ingests never pack; doctor names a collection whose rows are due (here the
    counter is raised by hand: 50,000 postings would take thousands of sentences) and --fix packs."""
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(2))
    collection = get_collection(conn, collection_name)
    check_name = f"BM25 postings of {collection_name!r} packed"
    [check] = [c for c in run_checks(conn) if c.name == check_name]
    assert check.ok and " as rows" in check.detail
    conn.execute("UPDATE windowrag.bm25_stats SET pending_postings = pending_postings + 60000 WHERE collection_id = %s",
                 [collection.id])
    [check] = [c for c in run_checks(conn) if c.name == check_name]
    assert not check.ok and "doctor --fix" in check.fix
    assert collection_name in repair_bm25(conn)
    assert counters(conn, collection_name)[:2] == (0, 0)
    assert all(c.ok for c in run_checks(conn) if repr(collection_name) in c.name)
    assert collection_name not in repair_bm25(conn)


def test_doctor_names_a_recent_pack_due_and_fix_runs_that_one(conn, embedder, collection_name):
    """Rows written after a full pack, a sizeable share of a large first tier (the counters raised by
    hand, as above): doctor says the pack due is a recent one, and --fix packs only the rows, into
    the recent tier, leaving the first tier as it was."""
    ingest = Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest
    ingest(port_documents(4))
    collection = get_collection(conn, collection_name)
    rebuild_bm25(conn, collection)
    first_tier = main_blocks(conn, collection.id)
    ingest(port_documents(2, prefix="new"))
    rows = counters(conn, collection_name)[0]
    assert rows > 0
    conn.execute("UPDATE windowrag.bm25_stats SET pending_postings = pending_postings + 100000, "
                 "packed_postings = packed_postings + 1000000 WHERE collection_id = %s", [collection.id])
    check_name = f"BM25 postings of {collection_name!r} packed"
    [check] = [c for c in run_checks(conn) if c.name == check_name]
    assert not check.ok and "bm25_pack_recent" in check.fix and "recent tier" in check.detail
    assert collection_name in repair_bm25(conn)
    pending, stale, _, recent = counters(conn, collection_name)
    assert (pending, stale, recent) == (0, 0, rows)
    assert main_blocks(conn, collection.id) == first_tier
    assert mismatches(conn, collection_name) == (0, 0, 0)


SEARCH = "SELECT sentence_id, score FROM windowrag.bm25_search(%s, %s, 200, {docs}, k1 => %s, b => %s)"
SENTENCE_READS = """SELECT coalesce(sum(idx_scan), 0) + coalesce(sum(seq_scan), 0) FROM pg_stat_xact_user_tables
                    WHERE relid = 'windowrag.sentences'::regclass"""


def test_whole_lists_give_exact_scores_without_reading_the_sentences(conn, embedder, collection_name):
    """Every query term's list read whole (and no stale posting): the summed postings are the
    answer, equal to scoring every matching sentence exactly (the document filter's path), for
    any k1 and b, and no sentence row is read. After a delete, packed postings of the deleted
    sentences remain: the sentences are read again (phase 2) and the answer stays exact."""
    Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(port_documents(15))
    collection = get_collection(conn, collection_name)
    rebuild_bm25(conn, collection)

    def compare(k1: float, b: float) -> list[int]:
        ids = [r[0] for r in conn.execute("SELECT id FROM windowrag.documents WHERE collection_id = %s",
                                          [collection.id]).fetchall()]
        reads = []
        for query in QUERIES:
            with conn.transaction():
                before = conn.execute(SENTENCE_READS).fetchone()[0]
                got = conn.execute(SEARCH.format(docs="NULL"), [collection_name, query, k1, b]).fetchall()
                reads.append(conn.execute(SENTENCE_READS).fetchone()[0] - before)
            exhaustive = conn.execute(SEARCH.format(docs="%s"), [collection_name, query, ids, k1, b]).fetchall()
            assert got == exhaustive and len(got) > 5
        return reads

    assert compare(1.2, 0.75) == [0] * len(QUERIES)
    assert compare(0.9, 0.3) == [0] * len(QUERIES)
    # 'crane' (180 postings) over per_term_limit: read whole while that costs less than cutting
    # it and re-scoring the shortlist (a candidate costs 100 postings in C, 12 in SQL: without
    # windowrag_native), cut and re-scored when it does not
    ids = [r[0] for r in conn.execute("SELECT id FROM windowrag.documents WHERE collection_id = %s",
                                      [collection.id]).fetchall()]
    exhaustive = dict(conn.execute("SELECT sentence_id, score FROM windowrag.bm25_search(%s, 'crane', 500, %s)",
                                   [collection_name, ids]).fetchall())
    for n, shortlist, re_scored, native in ((5, 20, False, False), (5, 5, True, False), (5, 5, False, True), (1, 1, True, True)):
        with conn.transaction(force_rollback=True):
            if not native:
                conn.execute("DROP EXTENSION windowrag_native")
            before = conn.execute(SENTENCE_READS).fetchone()[0]
            got = conn.execute("SELECT sentence_id, score FROM windowrag.bm25_search(%s, 'crane', %s,"
                               " per_term_limit => 10, shortlist_size => %s)", [collection_name, n, shortlist]).fetchall()
            assert (conn.execute(SENTENCE_READS).fetchone()[0] > before) is re_scored
        assert len(got) == n and all(exhaustive[sid] == score for sid, score in got)
        if not re_scored:
            assert got == sorted(exhaustive.items(), key=lambda item: (-item[1], item[0]))[:n]
    assert delete_document(conn, collection, "port3")
    assert counters(conn, collection_name)[1] > 0  # stale packed postings
    assert all(reads > 0 for reads in compare(1.2, 0.75))


def test_migration_0013_down_and_up_keeps_every_score(db_url, embedder, eval_dir):
    """0013 replaced the packed impacts by tf and length: down to 0012 (impacts computed again)
    and back up, a bulk-loaded (packed) collection gives the same BM25 results at every step."""
    sources = list(iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))[:12]
    queries = ["confidential information", "return or destroy all copies", "governing law of the agreement"]
    blocks = "SELECT lexeme, block, sentence_ids, tfs, lengths FROM windowrag.bm25_blocks ORDER BY 1, 2"

    def results(conn) -> list:
        return [conn.execute("SELECT sentence_id, score FROM windowrag.bm25_search('nda', %s, 30)", [q]).fetchall()
                for q in queries]
    with scratch_database(db_url, "bm25_exact_migration_test") as url, db.connect(url, autocommit=True) as conn:
        assert not Ingestor(conn, collection="nda", embedder=embedder, bulk=True).ingest(sources).errors
        assert counters(conn, "nda")[2] > 0 and counters(conn, "nda")[0] == 0  # packed
        at_head, packed = results(conn), conn.execute(blocks).fetchall()
        db.downgrade(conn, "0012")
        assert results(conn) == at_head
        assert conn.execute("SELECT count(*) FROM windowrag.bm25_blocks WHERE cardinality(impacts) = 0"
                            " OR impacts[1] <> max_impact").fetchone()[0] == 0
        db.upgrade(conn)
        assert results(conn) == at_head and conn.execute(blocks).fetchall() == packed
        assert mismatches(conn, "nda") == (0, 0, 0)
