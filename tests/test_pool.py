"""psycopg_pool pools wherever a connection is taken: same results, concurrent use, connections
handed back as they were lent."""
from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool

from windowrag_pg.db.source import connection_source
from windowrag_pg.ingest import Ingestor
from windowrag_pg.pipeline import Pipeline
from windowrag_pg.retrieve.retriever import Retriever
from windowrag_pg.sources import SourceDocument

from .conftest import SAMPLE_QUERIES


def contexts(result):
    return [(c.citation.document_id, c.citation.start_char, c.citation.end_char, c.text, c.score)
            for c in result.contexts]


def test_pipeline_on_a_pool_equals_one_connection_under_concurrency(conn, db_url, embedder, samples_collection):
    single = Pipeline(conn, collection=samples_collection, embedder=embedder)
    want = {q: contexts(single.search(q, k=3)) for q in SAMPLE_QUERIES}
    with ConnectionPool(db_url, min_size=1, max_size=2, open=True) as pool:
        pooled = Pipeline(pool, collection=samples_collection, embedder=embedder)
        with ThreadPoolExecutor(max_workers=4) as workers:  # more threads than connections
            got = list(workers.map(lambda q: (q, contexts(pooled.search(q, k=3))), SAMPLE_QUERIES * 3))
        assert all(want[q] == result for q, result in got)
        assert all(want[q] for q in SAMPLE_QUERIES)
        stats = pool.get_stats()
        assert stats["pool_size"] <= 2 and stats["requests_num"] >= len(got)
        with pool.connection() as lent:  # handed back idle, not in a transaction
            assert lent.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        retriever = Retriever(pool, collection=samples_collection, embedder=embedder)
        assert retriever.search(SAMPLE_QUERIES[0], k=1).contexts[0].document_id == "handbook.md"


@pytest.mark.parametrize("autocommit", [True, False])
def test_pipelines_sharing_one_connection_take_turns_on_it(db_url, embedder, samples_collection, collection_name,
                                                           autocommit):
    """Four Pipelines given one caller's connection, searched from four threads at once from their
    first use: each wrapped the connection with a first-use lock and transaction count of its own,
    so they nested their transactions (OutOfOrderTransactionNesting, "Explicit rollback()
    forbidden within a Transaction context") and left the connection in one, where the caller's
    next INSERT was lost and Ingestor(conn) refused it."""
    table = sql.Identifier(f"caller_rows_{uuid.uuid4().hex[:8]}")
    with psycopg.connect(db_url, autocommit=True) as other:
        other.execute(sql.SQL("CREATE TABLE public.{} (note text)").format(table))
        try:
            for trial in range(3):  # a fresh connection each time: its first use is the race
                with psycopg.connect(db_url, autocommit=autocommit) as shared:
                    pipelines = [Pipeline(shared, collection=samples_collection, embedder=embedder) for _ in range(4)]
                    start = threading.Barrier(len(pipelines))

                    def search_all(pipeline):
                        start.wait()
                        return [contexts(pipeline.search(q, k=2)) for q in SAMPLE_QUERIES]

                    with ThreadPoolExecutor(max_workers=len(pipelines)) as workers:
                        results = list(workers.map(search_all, pipelines))
                    assert all(result == results[0] for result in results) and all(results[0])
                    assert shared.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
                    shared.execute(sql.SQL("INSERT INTO public.{} VALUES ('the caller''s row')").format(table))
                    if not autocommit:
                        shared.commit()
                    seen = other.execute(sql.SQL("SELECT count(*) FROM public.{}").format(table)).fetchone()[0]
                    assert seen == trial + 1  # committed, visible from another connection
                    report = Ingestor(shared, collection=collection_name, embedder=embedder).ingest(
                        [SourceDocument(external_id=f"after-{trial}", format="text",
                                        text="Written after the searches. On the same connection.")])
                    assert (report.added, report.errors) == (1, [])
        finally:
            other.execute(sql.SQL("DROP TABLE public.{}").format(table))


def test_ingestor_on_a_pool_commits_each_document_and_restores_the_connection(db_url, embedder, collection_name):
    with ConnectionPool(db_url, min_size=1, max_size=1, open=True) as pool:
        ingestor = Ingestor(pool, collection=collection_name, embedder=embedder)
        report = ingestor.ingest([SourceDocument(external_id=f"d{i}", format="text",
                                                 text=f"Document {i} talks about pools. It has two sentences.")
                                  for i in range(3)])
        assert (report.added, report.errors) == (3, [])
        with pool.connection() as lent:
            assert lent.autocommit is False  # as the pool made it
            count = lent.execute("SELECT count(*) FROM windowrag.documents d JOIN windowrag.collections c "
                                 "ON c.id = d.collection_id WHERE c.name = %s", [collection_name]).fetchone()[0]
        assert count == 3


def test_what_is_not_a_connection_is_refused_by_name(db_url):
    with pytest.raises(TypeError, match="expected a psycopg Connection, a psycopg_pool ConnectionPool or a URL, not int"):
        connection_source(42)
    with pytest.raises(TypeError, match="AsyncConnectionPool is asynchronous: use windowrag_pg.asearch"):
        from psycopg_pool import AsyncConnectionPool

        connection_source(AsyncConnectionPool(db_url, open=False))
