"""Tenant isolation with row-level security (sql/tenancy.sql, docs/tenancy.md).

Two collections in two tenants, ingested by the library as the owner; then every read path —
each table, each SQL function, the Python Retriever and Pipeline and the statements they run —
is tried as roles of tenant A, as a role mapped to no tenant, and as a service role that picks
its tenant per request. Tenant A must read 0 rows of tenant B everywhere and still find its own.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import errors, sql

from windowrag_pg.db import connection as db
from windowrag_pg.db.sqlfiles import load_sql
from windowrag_pg.cli import main
from windowrag_pg.doctor import Check, drop_orphan_indexes, repair_owner_only_functions, run_checks
from windowrag_pg.ingest import Ingestor
from windowrag_pg.pipeline import Pipeline
from windowrag_pg.retrieve.retriever import Retriever
from windowrag_pg.sources import SourceDocument
from windowrag_pg.store.bm25 import rebuild_bm25
from windowrag_pg.store.collections import (
    CollectionError, collection_index_name, get_collection, list_collection_stats,
)
from windowrag_pg.store.writer import delete_document

WRITER_A = "wrtest_tenant_a"        # LOGIN, windowrag_writer, mapped to tenant A
WRITER_B = "wrtest_tenant_b"        # LOGIN, windowrag_writer, mapped to tenant B (the victim)
READER_A = "wrtest_tenant_a_ro"     # LOGIN, windowrag_reader, tenant A through a group role
GROUP_A = "wrtest_group_a"          # NOLOGIN group role mapped to tenant A
SERVICE = "wrtest_service"          # LOGIN, windowrag_service + windowrag_writer
STRANGER = "wrtest_stranger"        # LOGIN, windowrag_reader, mapped to no tenant
LOGIN_ROLES = (WRITER_A, WRITER_B, READER_A, SERVICE, STRANGER)
DANGLING = "wrtest_no_such_role"    # a tenant_roles row naming a role that does not exist

TABLES = ("collections", "documents", "sections", "sentences", "bm25_stats", "bm25_terms", "bm25_postings")
DATA_TABLES = (*TABLES, "bm25_blocks")  # TABLES are 0002's; bm25_blocks came with 0011

DOCS_A = [
    SourceDocument(external_id="a-handbook", format="markdown", title="Alpha handbook", text=(
        "# Alpha handbook\n\nThe alpha team ships the lighthouse project every spring. "
        "Confidential budgets are reviewed by the alpha board each quarter.\n\n## Travel\n\n"
        "Alpha employees book travel through the portal. Receipts are filed within ten days.")),
    SourceDocument(external_id="a-policy", format="markdown", title="Alpha policy", text=(
        "# Alpha policy\n\nLaptops must be encrypted. Confidential budgets never leave the alpha office.")),
]
DOCS_B = [
    SourceDocument(external_id="b-secrets", format="markdown", title="Bravo secrets", text=(
        "# Bravo secrets\n\nThe bravo merger codename is zebraquartz. Confidential budgets of bravo "
        "are hidden in the vault.\n\n## Payroll\n\nBravo salaries are paid on the first Friday. "
        "The zebraquartz plan closes in June.")),
    SourceDocument(external_id="b-notes", format="markdown", title="Bravo notes", text=(
        "# Bravo notes\n\nZebraquartz confidential budgets were approved by the bravo board.")),
]
SECRET = "zebraquartz"
SHARED = "confidential budgets"


@dataclass
class Tenancy:
    db_url: str
    tenant_a: str
    tenant_b: str
    name_a: str
    name_b: str
    id_a: int
    id_b: int
    counts_a: dict[str, int]     # rows of collection A per table, as the owner sees them
    counts_b: dict[str, int]
    sentences_b: list[int]
    documents_b: list[int]
    sections_b: list[int]
    external_ids_a: set[str]

    def url(self, role: str) -> str:
        return psycopg.conninfo.make_conninfo(self.db_url, user=role)

    def connect(self, role: str) -> psycopg.Connection:
        return db.connect(self.url(role), autocommit=True)


def _collection_counts(owner: psycopg.Connection, collection_id: int) -> dict[str, int]:
    counts = {"collections": 1}
    for table in ("documents", "sentences", "bm25_stats", "bm25_terms", "bm25_postings", "bm25_blocks"):
        counts[table] = owner.execute(
            sql.SQL("SELECT count(*) FROM windowrag.{} WHERE collection_id = %s").format(sql.Identifier(table)),
            [collection_id]).fetchone()[0]
    counts["sections"] = owner.execute(
        "SELECT count(*) FROM windowrag.sections s JOIN windowrag.documents d ON d.id = s.document_id "
        "WHERE d.collection_id = %s", [collection_id]).fetchone()[0]
    return counts


def _create_login_role(owner: psycopg.Connection, role: str, *groups: str) -> None:
    exists = owner.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
    if not exists:
        owner.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    for group in groups:
        owner.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), sql.Identifier(role)))


@pytest.fixture(scope="module")
def tenancy(db_url, embedder):
    run = uuid.uuid4().hex[:8]
    tenant_a, tenant_b = f"tenant_a_{run}", f"tenant_b_{run}"
    name_a, name_b = f"rls_a_{run}", f"rls_b_{run}"
    with db.connect(db_url, autocommit=True) as owner:
        roles = {r[0] for r in owner.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE 'windowrag%'")}
        assert {"windowrag_reader", "windowrag_writer", "windowrag_service"} <= roles
        if not owner.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [GROUP_A]).fetchone():
            owner.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(GROUP_A)))
        _create_login_role(owner, WRITER_A, "windowrag_writer")
        _create_login_role(owner, WRITER_B, "windowrag_writer")
        _create_login_role(owner, READER_A, "windowrag_reader", GROUP_A)
        _create_login_role(owner, SERVICE, "windowrag_service", "windowrag_writer")
        _create_login_role(owner, STRANGER, "windowrag_reader")

        for name, docs in ((name_a, DOCS_A), (name_b, DOCS_B)):
            # the first documents packed into BM25 blocks, the last as posting rows: both kinds
            report = Ingestor(owner, collection=name, embedder=embedder).ingest(docs[:-1])
            rebuild_bm25(owner, get_collection(owner, name))
            report.added += Ingestor(owner, collection=name, embedder=embedder).ingest(docs[-1:]).added
            assert not report.errors and report.added == len(docs)
        owner.execute("UPDATE windowrag.collections SET tenant = %s WHERE name = %s", [tenant_a, name_a])
        owner.execute("UPDATE windowrag.collections SET tenant = %s WHERE name = %s", [tenant_b, name_b])
        owner.execute("DELETE FROM windowrag.tenant_roles WHERE role_name = ANY (%s)",
                      [[*LOGIN_ROLES, GROUP_A, DANGLING]])
        owner.execute("INSERT INTO windowrag.tenant_roles (tenant, role_name)"
                      " VALUES (%s, %s), (%s, %s), (%s, %s), (%s, %s)",
                      [tenant_a, WRITER_A, tenant_a, GROUP_A, tenant_b, DANGLING, tenant_b, WRITER_B])
        for table in TABLES:
            owner.execute(sql.SQL("ANALYZE windowrag.{}").format(sql.Identifier(table)))

        id_a = get_collection(owner, name_a).id
        id_b = get_collection(owner, name_b).id
        state = Tenancy(
            db_url=db_url, tenant_a=tenant_a, tenant_b=tenant_b, name_a=name_a, name_b=name_b,
            id_a=id_a, id_b=id_b,
            counts_a=_collection_counts(owner, id_a), counts_b=_collection_counts(owner, id_b),
            sentences_b=[r[0] for r in owner.execute(
                "SELECT id FROM windowrag.sentences WHERE collection_id = %s", [id_b])],
            documents_b=[r[0] for r in owner.execute(
                "SELECT id FROM windowrag.documents WHERE collection_id = %s", [id_b])],
            sections_b=[r[0] for r in owner.execute(
                "SELECT s.id FROM windowrag.sections s JOIN windowrag.documents d ON d.id = s.document_id "
                "WHERE d.collection_id = %s", [id_b])],
            external_ids_a={d.external_id for d in DOCS_A},
        )
        assert state.counts_b["sentences"] > 0 and state.counts_b["bm25_postings"] > 0 and state.counts_b["bm25_blocks"] > 0
        # sections take their document's collection (trigger), also when written by COPY
        assert owner.execute("SELECT count(*) FROM windowrag.sections s JOIN windowrag.documents d"
                             " ON d.id = s.document_id WHERE s.collection_id <> d.collection_id").fetchone()[0] == 0
    yield state
    with db.connect(db_url, autocommit=True) as owner:
        owner.execute("DELETE FROM windowrag.collections WHERE id = ANY (%s)", [[id_a, id_b]])
        for cid in (id_a, id_b):
            owner.execute(sql.SQL("DROP INDEX IF EXISTS windowrag.{}").format(
                sql.Identifier(f"sentences_embedding_hnsw_c{cid}")))
        owner.execute("DELETE FROM windowrag.tenant_roles WHERE role_name = ANY (%s)",
                      [[*LOGIN_ROLES, GROUP_A, DANGLING]])


# -- helpers ------------------------------------------------------------------------------------

def _visible_counts(conn: psycopg.Connection) -> dict[str, int]:
    return {table: conn.execute(sql.SQL("SELECT count(*) FROM windowrag.{}").format(sql.Identifier(table))).fetchone()[0]
            for table in DATA_TABLES}


def _rows_of_b(conn: psycopg.Connection, t: Tenancy) -> dict[str, int]:
    """Rows of tenant B's collection each table shows to CONN (all must be 0)."""
    counts = {
        "collections": conn.execute(
            "SELECT count(*) FROM windowrag.collections WHERE id = %s OR tenant = %s OR name = %s",
            [t.id_b, t.tenant_b, t.name_b]).fetchone()[0],
        "sections": conn.execute(
            "SELECT count(*) FROM windowrag.sections WHERE id = ANY (%s) OR document_id = ANY (%s) OR collection_id = %s",
            [t.sections_b, t.documents_b, t.id_b]).fetchone()[0],
    }
    for table in ("documents", "sentences", "bm25_stats", "bm25_terms", "bm25_postings", "bm25_blocks"):
        counts[table] = conn.execute(
            sql.SQL("SELECT count(*) FROM windowrag.{} WHERE collection_id = %s").format(sql.Identifier(table)),
            [t.id_b]).fetchone()[0]
    counts["sentences_by_id"] = conn.execute(
        "SELECT count(*) FROM windowrag.sentences WHERE id = ANY (%s)", [t.sentences_b]).fetchone()[0]
    counts["postings_by_sentence"] = conn.execute(
        "SELECT count(*) FROM windowrag.bm25_postings WHERE sentence_id = ANY (%s)", [t.sentences_b]).fetchone()[0]
    counts["secret_text"] = conn.execute(
        "SELECT (SELECT count(*) FROM windowrag.documents WHERE text ILIKE %(p)s)"
        " + (SELECT count(*) FROM windowrag.sentences WHERE text ILIKE %(p)s)"
        " + (SELECT count(*) FROM windowrag.bm25_terms WHERE lexeme = %(l)s)",
        {"p": f"%{SECRET}%", "l": SECRET}).fetchone()[0]
    return counts


def _assert_no_rows_of_b(conn: psycopg.Connection, t: Tenancy) -> None:
    counts = _rows_of_b(conn, t)
    assert counts == dict.fromkeys(counts, 0)


def _function_calls(t: Tenancy, embedding) -> dict[str, tuple[str, list]]:
    return {
        "collection_id": ("SELECT windowrag.collection_id(%s)", [t.name_b]),
        "bm25_search": ("SELECT * FROM windowrag.bm25_search(%s, %s)", [t.name_b, SECRET]),
        "dense_search": ("SELECT * FROM windowrag.dense_search(%s, %s)", [t.name_b, embedding]),
        "hybrid_search": ("SELECT * FROM windowrag.hybrid_search(%s, %s, %s)", [t.name_b, SECRET, embedding]),
        "search_windows": ("SELECT * FROM windowrag.search_windows(%s, %s, %s)", [t.name_b, SECRET, embedding]),
    }


def _assert_function_paths_closed(conn: psycopg.Connection, t: Tenancy, embedding) -> None:
    for label, (statement, params) in _function_calls(t, embedding).items():
        with pytest.raises(errors.UndefinedObject, match="does not exist") as info:
            with conn.transaction():  # a savepoint when the caller is inside a transaction
                conn.execute(statement, params).fetchall()
        # the same answer as for a collection that does not exist at all
        assert info.value.diag.message_primary.replace(t.name_b, "?") == \
            _unknown_collection_error(conn, statement, params), label
    windows = conn.execute(
        "SELECT count(*) FROM unnest(%s::bigint[]) AS i(id), windowrag.sentence_window(i.id, 3, 'document')",
        [t.sentences_b]).fetchone()[0]
    assert windows == 0
    windows = conn.execute(
        "SELECT count(*) FROM unnest(%s::bigint[]) AS i(id), windowrag.sentence_window(i.id)",
        [t.sentences_b]).fetchone()[0]
    assert windows == 0


def _unknown_collection_error(conn, statement, params) -> str:
    missing = [f"no_such_{uuid.uuid4().hex[:6]}", *params[1:]]  # the collection is the first argument
    with pytest.raises(errors.UndefinedObject) as info:
        with conn.transaction():
            conn.execute(statement, missing).fetchall()
    return info.value.diag.message_primary.replace(missing[0], "?")


# -- reading as tenant A ------------------------------------------------------------------------

@pytest.mark.parametrize("role", [WRITER_A, READER_A])
def test_tenant_role_reads_only_its_own_rows_in_every_table(tenancy, role):
    with tenancy.connect(role) as conn:
        assert conn.execute("SELECT windowrag.current_tenants()").fetchone()[0] == [tenancy.tenant_a]
        assert conn.execute("SELECT windowrag.visible_collection_ids()").fetchone()[0] == [tenancy.id_a]
        _assert_no_rows_of_b(conn, tenancy)
        # whole tables: exactly tenant A's rows (none of B, none of the 'default' collections)
        assert _visible_counts(conn) == tenancy.counts_a
        # the mapping is the owner's: a role learns its own tenants only, not other roles'
        with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
            conn.execute("SELECT * FROM windowrag.tenant_roles")
        other = READER_A if role == WRITER_A else WRITER_A
        assert conn.execute("SELECT windowrag.role_tenants(%s)", [other]).fetchone()[0] == []
        assert conn.execute("SELECT windowrag.role_tenants(%s)", [role]).fetchone()[0] == [tenancy.tenant_a]
        # planner statistics of RLS tables are hidden from roles under RLS
        assert conn.execute("SELECT count(*) FROM pg_stats WHERE schemaname = 'windowrag' "
                            "AND tablename <> 'alembic_version'").fetchone()[0] == 0


def test_every_sql_function_refuses_the_other_tenant(tenancy, embedder):
    embedding = embedder.embed_query(SHARED)
    with tenancy.connect(WRITER_A) as conn:
        _assert_function_paths_closed(conn, tenancy, embedding)
        # document_ids of B inside A's own collection find nothing either
        assert conn.execute("SELECT count(*) FROM windowrag.bm25_search(%s, %s, 50, %s)",
                            [tenancy.name_a, SHARED, tenancy.documents_b]).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM windowrag.dense_search(%s, %s, 50, %s)",
                            [tenancy.name_a, embedding, tenancy.documents_b]).fetchone()[0] == 0
        # A's own searches work, through every function, and return only A's sentences
        own = {r[0] for r in conn.execute("SELECT id FROM windowrag.sentences")}
        bm25 = [r[0] for r in conn.execute("SELECT sentence_id FROM windowrag.bm25_search(%s, %s)",
                                           [tenancy.name_a, SHARED])]
        dense = [r[0] for r in conn.execute("SELECT sentence_id FROM windowrag.dense_search(%s, %s)",
                                            [tenancy.name_a, embedding])]
        hybrid = [r[0] for r in conn.execute("SELECT sentence_id FROM windowrag.hybrid_search(%s, %s, %s)",
                                             [tenancy.name_a, SHARED, embedding])]
        assert bm25 and dense and hybrid and set(bm25 + dense + hybrid) <= own
        windows = conn.execute("SELECT external_id, text FROM windowrag.search_windows(%s, %s, %s)",
                               [tenancy.name_a, SHARED, embedding]).fetchall()
        assert windows and {w[0] for w in windows} <= tenancy.external_ids_a
        assert not any(SECRET in w[1].lower() for w in windows)
        assert conn.execute("SELECT count(*) FROM windowrag.sentence_window(%s)", [bm25[0]]).fetchone()[0] == 1
        assert conn.execute("SELECT windowrag.collection_id(%s)", [tenancy.name_a]).fetchone()[0] == tenancy.id_a


def test_python_api_refuses_the_other_tenant(tenancy, embedder):
    with tenancy.connect(READER_A) as conn:
        with pytest.raises(CollectionError):
            get_collection(conn, tenancy.name_b)
        for mode in ("hybrid", "dense", "bm25"):
            with pytest.raises(CollectionError):
                Retriever(conn, embedder=embedder, collection=tenancy.name_b).search(SECRET, mode=mode)
        with pytest.raises(CollectionError):
            Retriever(conn, embedder=embedder, collection=tenancy.name_a).search(
                SECRET, collection=tenancy.name_b, filters={"document_id": "b-secrets"})
        with pytest.raises(CollectionError):
            Pipeline(conn, collection=tenancy.name_b, embedder=embedder).search(SECRET, rerank=False)
        # the statements the Pipeline runs after retrieval, given B's keys, return nothing
        assert conn.execute(load_sql("segment_sentences"), {
            "documents": tenancy.documents_b, "firsts": [0] * len(tenancy.documents_b),
            "lasts": [10_000] * len(tenancy.documents_b)}).fetchall() == []
        assert conn.execute(load_sql("document_slices"), {
            "documents": tenancy.documents_b, "starts": [0] * len(tenancy.documents_b),
            "ends": [100] * len(tenancy.documents_b)}).fetchall() == []
        assert conn.execute(load_sql("section_paths"), {"sections": tenancy.sections_b}).fetchall() == []
        assert [row["collection"] for row in list_collection_stats(conn)] == [tenancy.name_a]

        # tenant A's own searches still work through the Python API
        result = Retriever(conn, embedder=embedder, collection=tenancy.name_a).search(SHARED, k=3)
        assert result.contexts and {c.document_id for c in result.contexts} <= tenancy.external_ids_a
        filtered = Retriever(conn, embedder=embedder, collection=tenancy.name_a).search(
            SHARED, filters={"document_id": "b-secrets"})
        assert filtered.contexts == []
        piped = Pipeline(conn, collection=tenancy.name_a, embedder=embedder).search(SHARED, rerank=False, k=3)
        assert piped.contexts and all(SECRET not in c.text.lower() for c in piped.contexts)


def test_set_windowrag_tenant_does_not_escalate_a_plain_role(tenancy, embedder):
    embedding = embedder.embed_query(SECRET)
    with tenancy.connect(WRITER_A) as conn:
        conn.execute(sql.SQL("SET windowrag.tenant = {}").format(sql.Literal(tenancy.tenant_b)))
        assert conn.execute("SELECT windowrag.current_tenants()").fetchone()[0] == [tenancy.tenant_a]
        _assert_no_rows_of_b(conn, tenancy)
        assert _visible_counts(conn) == tenancy.counts_a
        _assert_function_paths_closed(conn, tenancy, embedding)
        with conn.transaction():
            conn.execute("SELECT set_config('windowrag.tenant', %s, true)", [tenancy.tenant_b])
            _assert_no_rows_of_b(conn, tenancy)
    with tenancy.connect(STRANGER) as conn:
        assert conn.execute("SELECT windowrag.current_tenants()").fetchone()[0] == []
        assert _visible_counts(conn) == dict.fromkeys(DATA_TABLES, 0)
        conn.execute(sql.SQL("SET windowrag.tenant = {}").format(sql.Literal(tenancy.tenant_a)))
        assert _visible_counts(conn) == dict.fromkeys(DATA_TABLES, 0)
        with pytest.raises(CollectionError):
            Retriever(conn, embedder=embedder, collection=tenancy.name_a).search(SHARED)


def test_service_role_sees_exactly_the_tenant_it_sets(tenancy, embedder):
    embedding = embedder.embed_query(SECRET)
    with tenancy.connect(SERVICE) as conn:
        # no tenant chosen: nothing, and every function names the collection as not existing
        # (search_windows gave no row, without a word, before migration 0033: found by a tester)
        assert conn.execute("SELECT windowrag.current_tenants()").fetchone()[0] == []
        assert _visible_counts(conn) == dict.fromkeys(DATA_TABLES, 0)
        _assert_function_paths_closed(conn, tenancy, embedding)

        conn.execute(sql.SQL("SET windowrag.tenant = {}").format(sql.Literal(tenancy.tenant_b)))
        assert _visible_counts(conn) == tenancy.counts_b
        hits = conn.execute("SELECT sentence_id FROM windowrag.bm25_search(%s, %s)", [tenancy.name_b, SECRET]).fetchall()
        assert hits
        with pytest.raises(errors.UndefinedObject):
            conn.execute("SELECT * FROM windowrag.bm25_search(%s, %s)", [tenancy.name_a, SHARED])
        conn.execute("RESET windowrag.tenant")
        assert _visible_counts(conn) == dict.fromkeys(DATA_TABLES, 0)

        # per request, transaction-scoped (what a pooled service should do)
        for tenant, name, query in ((tenancy.tenant_a, tenancy.name_a, SHARED), (tenancy.tenant_b, tenancy.name_b, SECRET)):
            with conn.transaction():
                conn.execute("SELECT set_config('windowrag.tenant', %s, true)", [tenant])
                result = Retriever(conn, embedder=embedder, collection=name).search(query, k=3)
                assert result.contexts
                expected = tenancy.external_ids_a if tenant == tenancy.tenant_a else {d.external_id for d in DOCS_B}
                assert {c.document_id for c in result.contexts} <= expected
                other = tenancy.name_b if tenant == tenancy.tenant_a else tenancy.name_a
                with pytest.raises(CollectionError):
                    get_collection(conn, other)
        assert conn.execute("SELECT windowrag.current_tenants()").fetchone()[0] == []
        assert _visible_counts(conn) == dict.fromkeys(DATA_TABLES, 0)

        with conn.transaction():
            conn.execute("SELECT set_config('windowrag.tenant', %s, true)", [tenancy.tenant_a])
            _assert_no_rows_of_b(conn, tenancy)
            _assert_function_paths_closed(conn, tenancy, embedding)


def test_owner_bypasses_row_level_security(tenancy, conn):
    # the library's own admin connection (table owner / superuser) sees every tenant
    counts = _visible_counts(conn)
    for table in DATA_TABLES:
        assert counts[table] >= tenancy.counts_a[table] + tenancy.counts_b[table]


def test_hnsw_index_still_serves_dense_search_under_rls(tenancy, embedder):
    with tenancy.connect(READER_A) as conn:
        dim = get_collection(conn, tenancy.name_a).dimension
        vector = "[" + ",".join(f"{x:.6f}" for x in embedder.embed_query(SHARED)) + "]"
        with conn.transaction():
            # the tables are tiny: take the alternatives away to see whether the index may be used
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_sort = off")
            plan = "\n".join(r[0] for r in conn.execute(sql.SQL(
                "EXPLAIN SELECT s.id FROM windowrag.sentences s WHERE s.collection_id = {cid} "
                "ORDER BY s.embedding::halfvec({dim}) <=> {vec}::halfvec({dim}) LIMIT 5").format(
                    cid=sql.Literal(tenancy.id_a), dim=sql.Literal(dim), vec=sql.Literal(vector))))
        assert f"sentences_embedding_hnsw_c{tenancy.id_a}" in plan, plan


# -- writing ------------------------------------------------------------------------------------

def test_read_only_role_can_search_but_not_write(tenancy, embedder):
    with tenancy.connect(READER_A) as conn:
        assert Retriever(conn, embedder=embedder, collection=tenancy.name_a).search(SHARED).contexts
        collection = get_collection(conn, tenancy.name_a)
        statements = [
            ("INSERT INTO windowrag.documents (collection_id, external_id, format, content_hash, text, sentence_count)"
             " VALUES (%s, 'x', 'text', 'h', 'x', 0)", [tenancy.id_a]),
            ("DELETE FROM windowrag.documents WHERE collection_id = %s", [tenancy.id_a]),
            ("UPDATE windowrag.documents SET title = 'x' WHERE collection_id = %s", [tenancy.id_a]),
            ("DELETE FROM windowrag.sentences WHERE collection_id = %s", [tenancy.id_a]),
            ("INSERT INTO windowrag.collections (name, embedding_model, dimension, tenant) VALUES ('x', 'm', 3, %s)",
             [tenancy.tenant_a]),
            ("DELETE FROM windowrag.collections WHERE id = %s", [tenancy.id_a]),
            ("INSERT INTO windowrag.bm25_terms VALUES (%s, 'x', 1)", [tenancy.id_a]),
            ("INSERT INTO windowrag.tenant_roles VALUES (%s, current_user)", [tenancy.tenant_b]),
        ]
        for statement, params in statements:
            with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
                conn.execute(statement, params)
        with pytest.raises(CollectionError, match=rf"role '{READER_A}' may not delete documents of collection"):
            delete_document(conn, collection, "a-policy")  # (a bare "permission denied" before: refused up front)
    with db.connect(tenancy.db_url, autocommit=True) as owner:
        assert _collection_counts(owner, tenancy.id_a) == tenancy.counts_a


def test_writer_writes_its_own_tenant_only(tenancy, embedder):
    texts = ["The kumquat orchard belongs to alpha.", "Kumquat harvest starts in May."]
    document_text = " ".join(texts)
    vectors = embedder.embed_documents(texts)
    with tenancy.connect(WRITER_A) as conn, db.connect(tenancy.db_url, autocommit=True) as owner:
        stats_before = owner.execute("SELECT n_sentences, total_length FROM windowrag.bm25_stats WHERE collection_id = %s",
                                     [tenancy.id_a]).fetchone()
        # a document of its own tenant, written with plain INSERTs: the BM25 triggers (SECURITY
        # DEFINER) maintain statistics the writer has no privilege on
        with conn.transaction():
            document = conn.execute(
                "INSERT INTO windowrag.documents (collection_id, external_id, format, content_hash, text, sentence_count)"
                " VALUES (%s, 'a-extra', 'text', 'h', %s, 2) RETURNING id", [tenancy.id_a, document_text]).fetchone()[0]
            section = conn.execute(
                "INSERT INTO windowrag.sections (document_id, ordinal, heading_path, level, start_char, end_char,"
                " first_sentence, last_sentence) VALUES (%s, 0, '{}', 0, 0, %s, 0, 1) RETURNING id",
                [document, len(document_text)]).fetchone()[0]
            conn.execute(
                "INSERT INTO windowrag.sentences (collection_id, document_id, section_id, ordinal, start_char, end_char,"
                " kind, text, token_count, embedding, tsv, bm25_length)"
                " SELECT %(c)s, %(d)s, %(s)s, r.ordinal - 1, r.start_char, r.start_char + length(r.text), 'sentence',"
                "        r.text, 8, r.embedding, v.tsv, (SELECT sum(cardinality(u.positions)) FROM unnest(v.tsv) u)"
                " FROM unnest(%(texts)s::text[], %(starts)s::int[], %(vectors)s::vector[])"
                "      WITH ORDINALITY AS r(text, start_char, embedding, ordinal),"
                " LATERAL (SELECT to_tsvector('english', r.text) AS tsv) v",
                {"c": tenancy.id_a, "d": document, "s": section, "texts": texts,
                 "starts": [0, len(texts[0]) + 1], "vectors": list(vectors)})
        assert owner.execute("SELECT n_sentences FROM windowrag.bm25_stats WHERE collection_id = %s",
                             [tenancy.id_a]).fetchone()[0] == stats_before[0] + 2
        hits = conn.execute("SELECT sentence_id FROM windowrag.bm25_search(%s, 'kumquat')", [tenancy.name_a]).fetchall()
        assert len(hits) == 2
        assert conn.execute("SELECT text FROM windowrag.sentence_window(%s)", [hits[0][0]]).fetchone()[0] == document_text
        # deleting it (sections and sentences by cascade) brings the statistics back
        assert conn.execute("DELETE FROM windowrag.documents WHERE id = %s", [document]).rowcount == 1
        assert owner.execute("SELECT n_sentences, total_length FROM windowrag.bm25_stats WHERE collection_id = %s",
                             [tenancy.id_a]).fetchone() == stats_before
        assert _collection_counts(owner, tenancy.id_a) == tenancy.counts_a

        a_document, a_section = conn.execute(
            "SELECT d.id, s.id FROM windowrag.documents d JOIN windowrag.sections s ON s.document_id = d.id "
            "WHERE d.collection_id = %s LIMIT 1", [tenancy.id_a]).fetchone()
        sentence_columns = ("INSERT INTO windowrag.sentences (collection_id, document_id, section_id, ordinal, start_char,"
                            " end_char, kind, text, token_count, embedding, tsv, bm25_length)"
                            " VALUES (%s, %s, %s, 9999, 0, 1, 'sentence', 'x', 1, %s, 'x', 1)")
        vector = vectors[0]
        refused = [
            # rows into B's collection
            ("INSERT INTO windowrag.documents (collection_id, external_id, format, content_hash, text, sentence_count)"
             " VALUES (%s, 'x', 'text', 'h', 'x', 0)", [tenancy.id_b]),
            (sentence_columns, [tenancy.id_b, tenancy.documents_b[0], tenancy.sections_b[0], vector]),
            ("INSERT INTO windowrag.sections (document_id, ordinal, heading_path, level, start_char, end_char)"
             " VALUES (%s, 999, '{}', 0, 0, 0)", [tenancy.documents_b[0]]),
            # an A sentence hung from B's document or section (foreign keys ignore RLS)
            (sentence_columns, [tenancy.id_a, tenancy.documents_b[0], tenancy.sections_b[0], vector]),
            (sentence_columns, [tenancy.id_a, a_document, tenancy.sections_b[0], vector]),
            # moving A's rows into B
            ("UPDATE windowrag.collections SET tenant = %s WHERE id = %s", [tenancy.tenant_b, tenancy.id_a]),
        ]
        for statement, params in refused:
            with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
                conn.execute(statement, params)
        # documents and sections never move (their sentences would not follow), for nobody
        moves = [("UPDATE windowrag.documents SET collection_id = %s WHERE collection_id = %s", [tenancy.id_b, tenancy.id_a]),
                 ("UPDATE windowrag.sections SET document_id = %s WHERE id = %s", [tenancy.documents_b[0], a_section]),
                 ("UPDATE windowrag.sections SET collection_id = %s WHERE id = %s", [tenancy.id_b, a_section])]
        for connection in (conn, owner):
            for statement, params in moves:
                with pytest.raises(errors.FeatureNotSupported, match="cannot move"):
                    connection.execute(statement, params)
        # B's rows are invisible to UPDATE and DELETE: nothing happens
        for statement in ("UPDATE windowrag.documents SET title = 'pwned' WHERE collection_id = %s",
                          "DELETE FROM windowrag.sentences WHERE collection_id = %s",
                          "DELETE FROM windowrag.documents WHERE collection_id = %s",
                          "DELETE FROM windowrag.collections WHERE id = %s"):
            assert conn.execute(statement, [tenancy.id_b]).rowcount == 0
        assert conn.execute("DELETE FROM windowrag.sections WHERE id = ANY (%s)", [tenancy.sections_b]).rowcount == 0
        # statistics only through the triggers; the owner-privileged trigger functions cannot be reused
        for statement in ("INSERT INTO windowrag.bm25_terms VALUES (%s, 'x', 1)" % tenancy.id_a,
                          "UPDATE windowrag.bm25_stats SET n_sentences = 0",
                          "DELETE FROM windowrag.bm25_postings",
                          "INSERT INTO windowrag.tenant_roles VALUES ('%s', current_user)" % tenancy.tenant_b):
            with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
                conn.execute(statement)
        conn.execute("CREATE TEMP TABLE fake (id bigint, collection_id integer, tsv tsvector, bm25_length integer)")
        with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
            conn.execute("CREATE TRIGGER fake_bm25 AFTER INSERT ON fake REFERENCING NEW TABLE AS new_rows "
                         "FOR EACH STATEMENT EXECUTE FUNCTION windowrag.bm25_after_insert()")
        # collections are provisioned by the owner (0007): no INSERT for writers, in any tenant,
        # and no nextval on the collections' integer sequence (it could be burnt through)
        for statement, params in (
                ("INSERT INTO windowrag.collections (name, embedding_model, dimension, tenant) VALUES (%s, 'm', 3, %s)",
                 [f"x_{uuid.uuid4().hex[:6]}", tenancy.tenant_a]),
                ("INSERT INTO windowrag.collections (name, embedding_model, dimension, tenant) VALUES (%s, 'm', 3, %s)",
                 [f"x_{uuid.uuid4().hex[:6]}", tenancy.tenant_b]),
                ("INSERT INTO windowrag.collections (name, embedding_model, dimension) VALUES (%s, 'm', 3)",
                 [f"x_{uuid.uuid4().hex[:6]}"]),
                ("SELECT nextval('windowrag.collections_id_seq') FROM generate_series(1, 1000)", None)):
            with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
                conn.execute(statement, params)
        with pytest.raises(CollectionError, match="may not create collections"):
            Ingestor(conn, collection=f"x_{uuid.uuid4().hex[:6]}", embedder=embedder, tenant=tenancy.tenant_a)
        # a collection the owner provisioned in its tenant it may delete
        own = f"x_{uuid.uuid4().hex[:6]}"
        owner.execute("INSERT INTO windowrag.collections (name, embedding_model, dimension, tenant) VALUES (%s, 'm', 3, %s)",
                      [own, tenancy.tenant_a])
        assert conn.execute("DELETE FROM windowrag.collections WHERE name = %s", [own]).rowcount == 1

        assert _collection_counts(owner, tenancy.id_b) == tenancy.counts_b
        assert _collection_counts(owner, tenancy.id_a) == tenancy.counts_a
        assert owner.execute("SELECT count(*) FROM windowrag.documents WHERE title = 'pwned'").fetchone()[0] == 0


# The library's own ingestion as a tenant writer (docs/tenancy.md, "Library support"):
# Ingestor(..., tenant=...), no CREATE INDEX on an existing collection index, and sections written
# with INSERT (Postgres refuses COPY FROM into a table with RLS enabled).
def test_library_ingest_as_tenant_writer(tenancy, embedder, capsys):
    extra = SourceDocument(external_id="a-lib", format="markdown", title="Alpha extra",
                           text="# Extra\n\nThe kumquat orchard belongs to alpha. Kumquat harvest starts in May.")
    with tenancy.connect(WRITER_A) as conn, db.connect(tenancy.db_url, autocommit=True) as owner:
        ingestor = Ingestor(conn, collection=tenancy.name_a, embedder=embedder, tenant=tenancy.tenant_a)
        report = ingestor.ingest([extra])
        assert not report.errors and report.added == 1
        assert ingestor.ingest([extra]).unchanged == 1
        result = Retriever(conn, embedder=embedder, collection=tenancy.name_a).search("kumquat harvest", k=1)
        assert result.contexts[0].document_id == "a-lib"
        assert delete_document(conn, ingestor.collection, "a-lib")
        assert _collection_counts(owner, tenancy.id_a) == tenancy.counts_a
        # the collection of another tenant cannot be opened for writing
        with pytest.raises(CollectionError):
            Ingestor(conn, collection=tenancy.name_b, embedder=embedder, tenant=tenancy.tenant_a)
        # the owner sees every collection, so ensure_collection checks the tenant it is given
        with pytest.raises(CollectionError, match="belongs to tenant"):
            Ingestor(owner, collection=tenancy.name_b, embedder=embedder, tenant=tenancy.tenant_a)
        assert _collection_counts(owner, tenancy.id_b) == tenancy.counts_b
    # a reader is told before its first document (each was refused with "permission denied"), and
    # a tenant role that doctor --fix is the owner's (a bare "permission denied for table ...")
    with tenancy.connect(READER_A) as reader:
        with pytest.raises(CollectionError, match=rf"role '{READER_A}' may not write documents into"):
            Ingestor(reader, collection=tenancy.name_a, embedder=embedder)
    from windowrag_pg.cli import main

    assert main(["--database-url", tenancy.url(WRITER_A), "doctor", "--fix"]) == 1
    assert f"windowrag doctor --fix needs the schema's owner: role '{WRITER_A}' may not" in capsys.readouterr().err


# -- availability: tenant A cannot stop tenant B's writers ----------------------------------------

VICTIM_DOC = SourceDocument(external_id="b-extra", format="markdown", title="Bravo extra",
                            text="# Extra\n\nBravo ships the quokka release on Monday. The quokka audit follows.")


def _victim_ingests_and_deletes(t: Tenancy, embedder) -> None:
    """Tenant B's writer ingests a new document and deletes it again, failing fast if anything blocks it."""
    with t.connect(WRITER_B) as victim:
        victim.execute("SET lock_timeout = '2s'")
        ingestor = Ingestor(victim, collection=t.name_b, embedder=embedder, tenant=t.tenant_b)
        report = ingestor.ingest([VICTIM_DOC])
        assert report.errors == [] and report.added == 1
        assert delete_document(victim, ingestor.collection, VICTIM_DOC.external_id)


@pytest.mark.parametrize("role", [READER_A, WRITER_A])
def test_no_tenant_lock_holds_another_tenants_ingest(tenancy, embedder, role):
    with tenancy.connect(role) as attacker:
        attacker.execute("BEGIN")
        # advisory locks on every key derived from B's collection id (the old write lock among them)
        attacker.execute("SELECT pg_advisory_lock(2024061501, %s), pg_advisory_xact_lock(2024061501, %s),"
                         " pg_advisory_lock(%s), pg_advisory_lock_shared(%s::bigint)",
                         [tenancy.id_b, tenancy.id_b, tenancy.id_b, tenancy.id_b])
        # row locks on B's rows: invisible to a writer of A, not allowed at all to a reader
        for statement, params in (
                ("SELECT id FROM windowrag.collections WHERE id = %s FOR UPDATE", [tenancy.id_b]),
                ("SELECT id FROM windowrag.documents WHERE collection_id = %s FOR UPDATE", [tenancy.id_b]),
                ("SELECT id FROM windowrag.collections WHERE id = %s FOR KEY SHARE", [tenancy.id_b])):
            attacker.execute("SAVEPOINT probe")
            if role == READER_A:
                with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
                    attacker.execute(statement, params)
                attacker.execute("ROLLBACK TO SAVEPOINT probe")
            else:
                assert attacker.execute(statement, params).fetchall() == []
        # its own collection's write lock is its own business: B is not affected by it either
        if role == WRITER_A:
            assert attacker.execute(load_sql("lock_collection_writes"), [tenancy.id_a]).fetchone() == (tenancy.id_a,)
        started = time.monotonic()
        _victim_ingests_and_deletes(tenancy, embedder)   # while A still holds all of the above
        assert time.monotonic() - started < 30
        attacker.execute("ROLLBACK")
    with db.connect(tenancy.db_url, autocommit=True) as owner:
        assert _collection_counts(owner, tenancy.id_b) == tenancy.counts_b


def test_no_tenant_chooses_ids_ahead_of_the_sequences(tenancy, embedder):
    def ahead(conn, table: str) -> int:
        return conn.execute(sql.SQL("SELECT last_value + 3 FROM windowrag.{}").format(
            sql.Identifier(f"{table}_id_seq"))).fetchone()[0]

    with tenancy.connect(WRITER_A) as conn:
        document, section = conn.execute(
            "SELECT d.id, s.id FROM windowrag.documents d JOIN windowrag.sections s ON s.document_id = d.id "
            "WHERE d.collection_id = %s LIMIT 1", [tenancy.id_a]).fetchone()
        vector = embedder.embed_documents(["x"])[0]
        explicit_ids = {
            # writers may not insert collections at all (test above); a role a DBA lets do it is
            # held to the sequence too (granted for this test, below)
            "collections": ("INSERT INTO windowrag.collections (id, name, embedding_model, dimension, tenant)"
                            " VALUES (%s, %s, 'm', 3, %s)", [f"x_{uuid.uuid4().hex[:6]}", tenancy.tenant_a]),
            "documents": ("INSERT INTO windowrag.documents (id, collection_id, external_id, format, content_hash,"
                          " text, sentence_count) VALUES (%s, %s, 'ahead', 'text', 'h', 'x', 0)", [tenancy.id_a]),
            "sections": ("INSERT INTO windowrag.sections (id, document_id, ordinal, heading_path, level, start_char,"
                         " end_char) VALUES (%s, %s, 999, '{}', 0, 0, 0)", [document]),
            "sentences": ("INSERT INTO windowrag.sentences (id, collection_id, document_id, section_id, ordinal,"
                          " start_char, end_char, kind, text, token_count, embedding, tsv, bm25_length)"
                          " VALUES (%s, %s, %s, %s, 9999, 0, 1, 'sentence', 'x', 1, %s, 'x', 1)",
                          [tenancy.id_a, document, section, vector]),
        }
        grant = sql.SQL("GRANT INSERT ON windowrag.collections TO {role};"
                        " GRANT USAGE ON windowrag.collections_id_seq TO {role}").format(role=sql.Identifier(WRITER_A))
        revoke = sql.SQL("REVOKE INSERT ON windowrag.collections FROM {role};"
                         " REVOKE USAGE ON windowrag.collections_id_seq FROM {role}").format(role=sql.Identifier(WRITER_A))
        with db.connect(tenancy.db_url, autocommit=True) as owner:
            owner.execute(grant)
        try:
            for table, (statement, params) in explicit_ids.items():
                conn.execute(sql.SQL("SELECT nextval({})").format(sql.Literal(f"windowrag.{table}_id_seq")))
                with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
                    conn.execute(statement, [ahead(conn, table), *params])
        finally:
            with db.connect(tenancy.db_url, autocommit=True) as owner:
                owner.execute(revoke)
        for table in explicit_ids:
            # nor may a row of its own move its id ahead of the sequence
            with pytest.raises(errors.FeatureNotSupported, match="cannot move"):
                conn.execute(sql.SQL("UPDATE windowrag.{} SET id = id + 1000000 WHERE id = (SELECT max(id) FROM windowrag.{})"
                                     ).format(sql.Identifier(table), sql.Identifier(table)))
            with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
                conn.execute("SELECT setval(%s, 1000000000)", [f"windowrag.{table}_id_seq"])
    # B's next ingest gets the next ids as usual
    _victim_ingests_and_deletes(tenancy, embedder)
    with db.connect(tenancy.db_url, autocommit=True) as owner:
        assert _collection_counts(owner, tenancy.id_a) == tenancy.counts_a
        assert _collection_counts(owner, tenancy.id_b) == tenancy.counts_b


# -- migration ----------------------------------------------------------------------------------

SCHEMA_FINGERPRINT = """
SELECT jsonb_build_object(
  'columns', (SELECT jsonb_agg(jsonb_build_array(c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
                                                 a.attnotnull, pg_get_expr(ad.adbin, ad.adrelid))
                                 ORDER BY c.relname, a.attnum)
                FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
                LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
               WHERE c.relnamespace = 'windowrag'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
                 AND c.relname NOT LIKE 'sentences_embedding_hnsw_c%' AND c.relname NOT LIKE 'kept\\_%'),
  'relations', (SELECT jsonb_agg(jsonb_build_array(c.relname, c.relkind, c.relrowsecurity, c.relforcerowsecurity,
                                                   coalesce(c.relacl, acldefault(
                                                       (CASE WHEN c.relkind = 'S' THEN 's' ELSE 'r' END)::"char", c.relowner))::text[])
                                 ORDER BY c.relname)
                  FROM pg_class c WHERE c.relnamespace = 'windowrag'::regnamespace
                   AND c.relname NOT LIKE 'sentences_embedding_hnsw_c%' AND c.relname NOT LIKE 'kept\\_%'),
  'functions', (SELECT jsonb_agg(jsonb_build_array(p.oid::regprocedure::text, p.prosecdef, p.proconfig,
                                                   p.provolatile, md5(p.prosrc),
                                                   coalesce(p.proacl, acldefault('f', p.proowner))::text[])
                                 ORDER BY p.oid::regprocedure::text)
                  FROM pg_proc p WHERE p.pronamespace = 'windowrag'::regnamespace),
  'policies', (SELECT count(*) FROM pg_policy pol JOIN pg_class c ON c.oid = pol.polrelid
                WHERE c.relnamespace = 'windowrag'::regnamespace),
  'schema_acl', (SELECT coalesce(n.nspacl, acldefault('n', n.nspowner))::text[] FROM pg_namespace n
                  WHERE n.nspname = 'windowrag'),
  'triggers', (SELECT jsonb_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname) FROM pg_trigger t
                JOIN pg_class c ON c.oid = t.tgrelid
               WHERE c.relnamespace = 'windowrag'::regnamespace AND NOT t.tgisinternal))
"""


# columns later revisions added to the 0002 tables
ADDED_AFTER_0002 = {"collections": ["tenant", "vector_index", "vector_centre", "vector_spread"], "sections": ["collection_id"], "sentences": ["gap"],
                    "bm25_stats": ["packed_postings", "pending_postings", "stale_postings", "recent_postings",
                                   "packed_through"],
                    "bm25_terms": ["packed_df", "recent_df"]}
# a posting's impact only orders a term's postings (scores come from tf and length): the upgrade
# through 0011 packs the rows and 0013 keeps tf and length, not the impact of the insert time
NOT_COMPARED = {**ADDED_AFTER_0002, "bm25_postings": ["impact"]}


def _all_rows(conn: psycopg.Connection) -> dict[str, list]:
    """Every row of the 0002 tables (as text, ordered), in the columns of 0002."""
    rows = {}
    for table in TABLES:
        columns = [r[0] for r in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped "
            "AND attname <> ALL (%s) ORDER BY attnum", [f"windowrag.{table}", NOT_COMPARED.get(table, [])])]
        query = sql.SQL("SELECT {cols} FROM windowrag.{table} ORDER BY 1, 2, 3").format(
            cols=sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c)) for c in columns),
            table=sql.Identifier(table))
        if table == "bm25_postings" and conn.execute("SELECT to_regclass('windowrag.bm25_blocks')").fetchone()[0]:
            query = sql.SQL(PACKED_AND_ROWS).format(query)  # 0011+: packed postings count as rows
        rows[table] = conn.execute(query).fetchall()
    return rows


# The postings at 0011+ as 0010's rows: those packed in blocks unpacked (as 0011's downgrade does).
PACKED_AND_ROWS = """
SELECT * FROM ({}) r
UNION ALL
SELECT b.collection_id::text, b.lexeme, u.sentence_id::text, u.tf::text, u.length::text
FROM windowrag.bm25_blocks b
CROSS JOIN LATERAL unnest(b.sentence_ids, b.tfs, b.lengths) u (sentence_id, tf, length)
WHERE EXISTS (SELECT 1 FROM windowrag.sentences s WHERE s.id = u.sentence_id)
ORDER BY 1, 2, 3
"""


def test_tenancy_migration_round_trip_keeps_every_row_and_tenant(db_url, embedder):
    name = "tenancy_migration_test"
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = psycopg.conninfo.make_conninfo(db_url, dbname=name)
    try:
        with psycopg.connect(url, autocommit=True) as plain:
            db.upgrade(plain, "0002")
            before_0003 = plain.execute(SCHEMA_FINGERPRINT).fetchone()[0]
        with db.connect(url, autocommit=True) as conn:
            assert db.current_revision(conn) == db.head_revision()
            for collection, docs in (("ta", DOCS_A), ("tb", DOCS_B)):
                assert not Ingestor(conn, collection=collection, embedder=embedder).ingest(docs).errors
            conn.execute("UPDATE windowrag.collections SET tenant = 'acme' WHERE name = 'ta'")
            conn.execute("UPDATE windowrag.collections SET tenant = 'bravo' WHERE name = 'tb'")
            conn.execute("INSERT INTO windowrag.tenant_roles VALUES ('acme', 'windowrag_reader')")
            rows = _all_rows(conn)
            assert all(rows[table] for table in TABLES)
            tenants = dict(conn.execute("SELECT name, tenant FROM windowrag.collections").fetchall())
            mapping = conn.execute("SELECT * FROM windowrag.tenant_roles ORDER BY 1, 2").fetchall()

            db.downgrade(conn, "0002")
            assert db.current_revision(conn) == "0002"
            # exactly 0002's schema, plus the two owner-only tables that keep the assignments
            assert conn.execute(SCHEMA_FINGERPRINT).fetchone()[0] == before_0003
            assert conn.execute("SELECT count(*) FROM windowrag.kept_collection_tenants").fetchone()[0] == 2
            assert conn.execute(  # owner only
                "SELECT count(*) FROM pg_class c WHERE c.relname LIKE 'kept%%' AND c.relnamespace = 'windowrag'::regnamespace"
                " AND NOT EXISTS (SELECT 1 FROM aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) a"
                "                  WHERE a.grantee <> c.relowner)").fetchone()[0] == 2
            assert _all_rows(conn) == rows
            # at 0002 the library still works on the kept rows
            assert conn.execute("SELECT count(*) FROM windowrag.bm25_search('tb', %s)", [SECRET]).fetchone()[0] > 0
            db.downgrade(conn, "0001")  # what issue 12 did; no data is lost, so no confirmation is asked
            assert db.current_revision(conn) == "0001"
        # the next connection's automatic upgrade puts every assignment back
        with db.connect(url, autocommit=True) as conn:
            assert db.current_revision(conn) == db.head_revision()
            assert _all_rows(conn) == rows
            assert dict(conn.execute("SELECT name, tenant FROM windowrag.collections").fetchall()) == tenants
            assert conn.execute("SELECT * FROM windowrag.tenant_roles ORDER BY 1, 2").fetchall() == mapping
            assert conn.execute("SELECT to_regclass('windowrag.kept_collection_tenants'),"
                                " to_regclass('windowrag.kept_tenant_roles')").fetchone() == (None, None)
            assert conn.execute("SELECT bool_and(relrowsecurity) FROM pg_class WHERE oid = ANY (%s::regclass[])",
                                [[f"windowrag.{t}" for t in TABLES]]).fetchone()[0]
            assert conn.execute("SELECT has_table_privilege('windowrag_reader', 'windowrag.sentences', 'SELECT')"
                                ).fetchone()[0]
    finally:
        with psycopg.connect(db_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_ids_migration_round_trip_restores_the_schema_before_it_exactly(db_url):
    from alembic.script import ScriptDirectory

    before_it = ScriptDirectory.from_config(db._alembic_config()).get_revision("0007").down_revision
    name = "tenant_ids_migration_test"
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = psycopg.conninfo.make_conninfo(db_url, dbname=name)
    writer_may_create = ("SELECT has_table_privilege('windowrag_writer', 'windowrag.collections', 'INSERT'),"
                         " has_sequence_privilege('windowrag_writer', 'windowrag.collections_id_seq', 'USAGE')")
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            db.upgrade(conn, before_it)
            before = conn.execute(SCHEMA_FINGERPRINT).fetchone()[0]
            assert conn.execute(writer_may_create).fetchone() == (True, True)
            db.upgrade(conn, "0007")
            assert conn.execute(writer_may_create).fetchone() == (False, False)
            db.downgrade(conn, before_it)
            assert conn.execute(SCHEMA_FINGERPRINT).fetchone()[0] == before
            assert conn.execute(writer_may_create).fetchone() == (True, True)
            db.upgrade(conn, "0007")
            conn.execute("SELECT windowrag.setup_tenancy_roles()")  # what a DBA re-runs keeps them away
            assert conn.execute(writer_may_create).fetchone() == (False, False)
    finally:
        with psycopg.connect(db_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_roles_that_may_not_migrate_or_use_the_schema_are_told_what_to_do(db_url):
    """A reader on a database behind the library (deployed before the owner migrated) got a
    60-line SQLAlchemy traceback ("permission denied for database ... CREATE SCHEMA"); a role
    without grants a bare "permission denied for schema windowrag"."""
    from .conftest import scratch_database

    with scratch_database(db_url, "tenancy_behind_test") as url:
        with db.connect(url, autocommit=True) as owner:
            _create_login_role(owner, "wrtest_behind_reader", "windowrag_reader")
            _create_login_role(owner, "wrtest_no_grants")
            db.downgrade(owner, "0026")
        as_reader = psycopg.conninfo.make_conninfo(url, user="wrtest_behind_reader")
        with pytest.raises(db.DatabaseError, match=rf"is at revision 0026, the library needs {db.head_revision()}, "
                                                   r"and role 'wrtest_behind_reader' may not migrate it: connect once as"):
            db.connect(as_reader)
        with db.connect(url, autocommit=True) as owner:
            assert db.current_revision(owner) == db.head_revision()  # the owner migrates it
        with db.connect(as_reader, autocommit=True) as reader:
            assert db.current_revision(reader) == db.head_revision()
        with pytest.raises(db.DatabaseError, match=r"role 'wrtest_no_grants' may not use the schema windowrag: "
                                                   r"permission denied for schema windowrag\. Grant it a windowrag role"):
            db.connect(psycopg.conninfo.make_conninfo(url, user="wrtest_no_grants"))


EXPLOIT = [  # a tenant reader attaches the owner's BM25 trigger to a table of its own
    "CREATE TEMP TABLE fake_sentences (id bigint, collection_id int, bm25_length int, tsv tsvector)",
    "CREATE TRIGGER t AFTER INSERT ON fake_sentences REFERENCING NEW TABLE AS new_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION windowrag.bm25_after_insert()",
]
OWNER_ONLY_GRANTS = """
SELECT has_function_privilege('windowrag_reader', 'windowrag.bm25_after_insert()', 'EXECUTE'),
       has_function_privilege('windowrag_reader', 'windowrag.bm25_rebuild(integer)', 'EXECUTE'),
       has_function_privilege('windowrag_reader', 'windowrag.bm25_pack_recent(integer)', 'EXECUTE'),
       has_function_privilege('windowrag_reader', 'windowrag.bm25_write_blocks(integer, float8, bigint)', 'EXECUTE')
"""


def _owner_only_check(conn) -> Check:
    (check,) = [c for c in run_checks(conn) if c.name == "owner-only functions"]
    return check


def _attach_owner_trigger(url: str, role: str) -> None:
    with psycopg.connect(psycopg.conninfo.make_conninfo(url, user=role)) as reader:
        for statement in EXPLOIT:
            reader.execute(statement)
        reader.rollback()


def test_setup_tenancy_roles_keeps_the_owner_only_functions_after_a_restore_without_privileges(db_url):
    """Found by a tester: after pg_restore --no-acl (every function executable by PUBLIC), the
    documented setup_tenancy_roles() left EXECUTE on bm25_after_insert to PUBLIC, and a tenant
    reader attached it to a temporary table of its own to rewrite another tenant's BM25
    statistics; on a normal database it granted readers the BM25 rebuilds. Migration 0032:
    setup_tenancy_roles() revokes them, doctor flags such a grant and --fix revokes it."""
    from .conftest import scratch_database

    reader_role = "wrtest_restored_reader"
    with scratch_database(db_url, "owner_only_functions_test") as url:
        with db.connect(url, autocommit=True) as owner:
            _create_login_role(owner, reader_role, "windowrag_reader")
            owner.execute("SELECT windowrag.setup_tenancy_roles()")  # a re-run grants no BM25 rebuild
            assert owner.execute(OWNER_ONLY_GRANTS).fetchone() == (False,) * 4
            assert _owner_only_check(owner).ok
            # what pg_restore --no-acl leaves: every function to PUBLIC
            owner.execute("GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA windowrag TO PUBLIC")
            check = _owner_only_check(owner)
            assert not check.ok and "windowrag.bm25_after_insert() executable by PUBLIC" in check.detail
            assert "windowrag.role_tenants" not in check.detail  # callable by all on purpose
            _attach_owner_trigger(url, reader_role)  # the exploit works in that state
            owner.execute("SELECT windowrag.setup_tenancy_roles()")
            assert owner.execute(OWNER_ONLY_GRANTS).fetchone() == (False,) * 4
            assert _owner_only_check(owner).ok
        with pytest.raises(errors.InsufficientPrivilege, match=r"permission denied for function (windowrag\.)?bm25_after_insert"):
            _attach_owner_trigger(url, reader_role)
        with db.connect(url, autocommit=True) as owner:
            owner.execute("GRANT EXECUTE ON FUNCTION windowrag.bm25_after_insert() TO windowrag_reader")
            check = _owner_only_check(owner)
            assert not check.ok and "bm25_after_insert() executable by windowrag_reader" in check.detail
            assert repair_owner_only_functions(owner) == ["windowrag.bm25_after_insert()"]  # doctor --fix
            assert _owner_only_check(owner).ok
            # a database restored so, then upgraded: 0032's upgrade revokes too
            db.downgrade(owner, "0031")
            owner.execute("GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA windowrag TO PUBLIC")
            db.upgrade(owner)
            assert _owner_only_check(owner).ok
        with pytest.raises(errors.InsufficientPrivilege, match=r"permission denied for function (windowrag\.)?bm25_after_insert"):
            _attach_owner_trigger(url, reader_role)


def test_owner_only_functions_migration_round_trip_restores_the_schema_before_it_exactly(db_url):
    from .conftest import scratch_database

    with scratch_database(db_url, "owner_only_round_trip_test") as url:
        with db.connect(url, autocommit=True) as conn:
            db.downgrade(conn, "0031")
            before = conn.execute(SCHEMA_FINGERPRINT).fetchone()[0]
            assert conn.execute("SELECT to_regprocedure('windowrag.owner_only_functions()')").fetchone()[0] is None
            db.upgrade(conn)
            head = conn.execute(SCHEMA_FINGERPRINT).fetchone()[0]
            assert head != before
            db.downgrade(conn, "0031")
            assert conn.execute(SCHEMA_FINGERPRINT).fetchone()[0] == before
            db.upgrade(conn)
            assert conn.execute(SCHEMA_FINGERPRINT).fetchone()[0] == head


def test_a_writer_deletes_its_collection_and_the_owner_drops_the_index_it_leaves(tenancy, embedder, capsys):
    """Found by a tester: a tenant writer's `windowrag delete-collection` committed the delete,
    then failed on DROP INDEX ("must be owner of index"), exited 1 and left the index for good;
    doctor never named it. The writer's delete succeeds and says the index is left for the owner;
    doctor names it and --fix (as the owner) drops it with its key functions."""
    name = f"rls_a_gone_{uuid.uuid4().hex[:8]}"
    with db.connect(tenancy.db_url, autocommit=True) as owner:
        report = Ingestor(owner, collection=name, embedder=embedder, tenant=tenancy.tenant_a).ingest(DOCS_A[:1])
        assert report.added == 1
        collection = get_collection(owner, name)
        index = collection_index_name(collection)
    assert main(["--database-url", tenancy.url(WRITER_A), "delete-collection", name]) == 0
    printed = capsys.readouterr()
    assert f"deleted collection {name!r} (1 document)" in printed.out
    assert f"role {WRITER_A!r} may not drop indexes" in printed.err and "windowrag doctor --fix" in printed.err
    with db.connect(tenancy.db_url, autocommit=True) as owner:
        assert owner.execute("SELECT count(*) FROM windowrag.collections WHERE name = %s", [name]).fetchone()[0] == 0
        [check] = [c for c in run_checks(owner) if c.name == "vector indexes of deleted collections"]
        assert not check.ok and f"windowrag.{index} (collection id {collection.id} no longer exists)" in check.detail
        assert drop_orphan_indexes(owner) == [f"windowrag.{index}"]
        [check] = [c for c in run_checks(owner) if c.name == "vector indexes of deleted collections"]
        assert check.ok
        assert owner.execute("SELECT to_regclass(%s)", [f"windowrag.{index}"]).fetchone()[0] is None
        assert owner.execute("SELECT count(*) FROM pg_proc WHERE proname LIKE %s",
                             [f"index\\_key\\_c{collection.id}\\_%"]).fetchone()[0] == 0
    with tenancy.connect(WRITER_A) as writer:  # a tenant role is not shown others' indexes as orphans
        assert not [c for c in run_checks(writer) if c.name == "vector indexes of deleted collections"]


@pytest.mark.parametrize("role", [READER_A, WRITER_A])
def test_a_tenant_role_is_told_before_any_work_what_it_may_not_delete_or_reembed(tenancy, embedder, role, capsys):
    """Found by a tester: a reader's `windowrag delete`, `delete-collection` and `reembed` failed on
    a bare "permission denied for table collections", a writer's reembed only after embedding
    the whole collection. Each is refused up front naming the role, the collection and the role
    it would need; nothing is embedded, nothing changes."""
    from windowrag_pg.reembed import reembed_collection

    url = tenancy.url(role)
    commands = [["delete", "--collection", tenancy.name_a, DOCS_A[0].external_id],
                ["delete-collection", tenancy.name_a],
                ["reembed", tenancy.name_a, "--embedder", embedder.model_id]]
    if role == WRITER_A:  # a writer may delete: only reembed is the owner's
        commands = commands[2:]
    for command in commands:
        assert main(["--database-url", url, *command]) == 1, command
        err = capsys.readouterr().err
        assert f"role {role!r} may not" in err and f"collection {tenancy.name_a!r}" in err, err
        assert ("schema's owner" in err) and ("windowrag_writer" in err or command[0] == "reembed"), err
        assert "permission denied" not in err
    embedded = []
    with tenancy.connect(role) as conn, pytest.raises(CollectionError, match=rf"role '{role}' may not re-embed"):
        reembed_collection(conn, tenancy.name_a, embedder, on_units=embedded.append)
    assert embedded == []  # refused before the first sentence was embedded
    with db.connect(tenancy.db_url, autocommit=True) as owner:
        assert _collection_counts(owner, tenancy.id_a) == tenancy.counts_a
