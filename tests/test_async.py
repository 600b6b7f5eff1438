"""The async API runs the synchronous pipeline's own steps: same contexts as search, on an
AsyncConnection or an AsyncConnectionPool, with the models off the event loop."""
from __future__ import annotations

import asyncio
import time
import uuid

import psycopg
import pytest
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

import windowrag_pg
from windowrag_pg import AsyncPipeline, Pipeline, QueryError

from .conftest import SAMPLE_QUERIES


def contexts(result):
    return [(c.citation.document_id, c.citation.start_char, c.citation.end_char, c.text, c.score)
            for c in result.contexts]


OPTIONS = [{"k": 3}, {"k": 2, "window": 1, "token_budget": 120}, {"k": 3, "mode": "bm25"},
           {"k": 2, "filters": {"document_id": "handbook.md"}}]


def test_asearch_returns_the_contexts_of_search(db_url, samples_collection):
    want = {(q, i): contexts(windowrag_pg.search(q, collection=samples_collection, url=db_url, **o))
            for q in SAMPLE_QUERIES for i, o in enumerate(OPTIONS)}

    async def main():
        return {(q, i): contexts(await windowrag_pg.asearch(q, collection=samples_collection, url=db_url, **o))
                for q in SAMPLE_QUERIES for i, o in enumerate(OPTIONS)}

    got = asyncio.run(main())
    assert got == want and all(want[(q, 0)] for q in SAMPLE_QUERIES)
    assert asyncio.run(main()) == want  # a second event loop gets connections of its own

    async def bad():
        await windowrag_pg.asearch("   ", collection=samples_collection, url=db_url)

    with pytest.raises(QueryError, match="query is empty"):
        asyncio.run(bad())


def test_async_pipeline_on_a_pool_and_on_a_connection(conn, db_url, embedder, samples_collection):
    sync = Pipeline(conn, collection=samples_collection, embedder=embedder)
    want = [contexts(sync.search(q, k=3, rerank=True)) for q in SAMPLE_QUERIES]

    async def main():
        async with AsyncConnectionPool(db_url, min_size=1, max_size=4) as pool:
            pipeline = AsyncPipeline(pool, pipeline=sync)  # shares the models
            concurrent = await asyncio.gather(*(pipeline.search(q, k=3, rerank=True) for q in SAMPLE_QUERIES))
            async with pool.connection() as lent:
                assert lent.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        async with await psycopg.AsyncConnection.connect(db_url) as aconn:  # not autocommit: left as it was
            one = AsyncPipeline(aconn, collection=samples_collection, embedder=embedder,
                                reranker=sync.reranker)
            single = await asyncio.gather(*(one.search(q, k=3, rerank=True) for q in SAMPLE_QUERIES))
            assert aconn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        return [contexts(r) for r in concurrent], [contexts(r) for r in single]

    concurrent, single = asyncio.run(main())
    assert concurrent == want and single == want


def test_async_pipelines_sharing_one_connection_take_turns_on_it(db_url, embedder, samples_collection):
    """Three AsyncPipelines on one AsyncConnection, first calls under asyncio.gather (as LlamaIndex's
    QueryFusionRetriever(use_async=True) runs two retrievers): each prepared the connection under
    a lock of its own, so they nested their transactions (OutOfOrderTransactionNesting) and left
    the autocommit connection in one, where the caller's next INSERT was never committed."""
    table = f"caller_rows_{uuid.uuid4().hex[:8]}"

    async def main():
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as shared:
            pipelines = [AsyncPipeline(shared, collection=samples_collection, embedder=embedder) for _ in range(3)]
            results = await asyncio.gather(*(p.search(q, k=2) for q in SAMPLE_QUERIES for p in pipelines))
            status = shared.info.transaction_status
            await shared.execute(sql.SQL("INSERT INTO public.{} VALUES ('the caller''s row')").format(
                sql.Identifier(table)))
            return [contexts(r) for r in results], status

    with psycopg.connect(db_url, autocommit=True) as other:
        other.execute(sql.SQL("CREATE TABLE public.{} (note text)").format(sql.Identifier(table)))
        try:
            results, status = asyncio.run(main())
            assert status == psycopg.pq.TransactionStatus.IDLE
            assert other.execute(sql.SQL("SELECT count(*) FROM public.{}").format(
                sql.Identifier(table))).fetchone()[0] == 1
        finally:
            other.execute(sql.SQL("DROP TABLE public.{}").format(sql.Identifier(table)))
    per_query = [results[i:i + 3] for i in range(0, len(results), 3)]
    assert all(same[0] and same.count(same[0]) == 3 for same in per_query)


def test_the_models_run_off_the_event_loop(conn, db_url, embedder, samples_collection):
    """While asearch reranks (hundreds of ms of CPU), other tasks on the loop keep running."""
    sync = Pipeline(conn, collection=samples_collection, embedder=embedder)
    sync.search(SAMPLE_QUERIES[0], k=3, rerank=True)  # models loaded

    async def main():
        async with AsyncConnectionPool(db_url, min_size=1, max_size=2) as pool:
            pipeline = AsyncPipeline(pool, pipeline=sync)
            ticks, longest_gap = 0, 0.0
            search = asyncio.create_task(pipeline.search(SAMPLE_QUERIES[1], k=5, rerank=True, rerank_candidates=20))
            last = time.perf_counter()
            started = last
            while not search.done():
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                ticks, longest_gap, last = ticks + 1, max(longest_gap, now - last), now
            await search
            return ticks, longest_gap, time.perf_counter() - started

    ticks, longest_gap, elapsed = asyncio.run(main())
    print(f"search took {elapsed * 1000:.0f} ms; the loop ticked {ticks} times, longest gap {longest_gap * 1000:.1f} ms")
    assert ticks >= 5 and longest_gap < elapsed / 2


def test_async_runs_the_abstention_check_as_search_does(conn, db_url, embedder, samples_collection):
    """The cross-encoder check (a band over every relevance) runs off the event loop with the same
    scores and decision as the synchronous pipeline."""
    sync = Pipeline(conn, collection=samples_collection, embedder=embedder)
    band = {"min_relevance": 0.0, "verify_below": 1.0}
    want = [sync.search(q, **band) for q in SAMPLE_QUERIES]

    async def main():
        async with AsyncConnectionPool(db_url, min_size=1, max_size=2) as pool:
            pipeline = AsyncPipeline(pool, pipeline=sync)
            return await asyncio.gather(*(pipeline.search(q, **band) for q in SAMPLE_QUERIES))

    got = asyncio.run(main())
    assert all(w.trace["verification"] and len(w.trace["verification"]["scores"]) == 2 for w in want)
    for w, g in zip(want, got):
        assert g.trace["verification"]["sentences"] == w.trace["verification"]["sentences"]
        assert g.trace["verification"]["scores"] == pytest.approx(w.trace["verification"]["scores"], abs=1e-6)
        assert (g.abstained, contexts(g)) == (w.abstained, contexts(w))


def test_the_kept_connections_close_and_open_again(db_url, samples_collection):
    """search/asearch keep their connections for the life of the process, with no way to close
    them: each asyncio.run(asearch(...)) left an AsyncConnection that warned when collected."""
    import gc
    import warnings

    query = SAMPLE_QUERIES[0]

    async def main():
        found = await windowrag_pg.asearch(query, collection=samples_collection, url=db_url, k=1)
        await windowrag_pg.aclose()
        return found

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert asyncio.run(main()).contexts
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    first = windowrag_pg.search(query, collection=samples_collection, url=db_url, k=1)
    pipeline = windowrag_pg._pipeline(samples_collection, db_url, None)
    windowrag_pg.close()
    assert pipeline.source._conn.closed
    assert windowrag_pg.search(query, collection=samples_collection, url=db_url, k=1).contexts == first.contexts
