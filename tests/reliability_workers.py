"""Worker processes for tests/test_reliability.py (importable by multiprocessing's spawn)."""
from __future__ import annotations

import random
import time

VERSION_TAG = "Version{version}"


def document_text(doc: int, version: int) -> str:
    tag = VERSION_TAG.format(version=version)
    return (f"Record {doc} describes item number {doc}. {tag} marks this edition of record {doc}. "
            f"Every sentence of record {doc} carries {tag} too. The final line of record {doc} ends {tag}.")


def writer(url: str, collection: str, seed: int, seconds: float, n_docs: int, queue) -> None:
    from windowrag_pg.db.connection import connect
    from windowrag_pg.embed import get_embedder
    from windowrag_pg.ingest import Ingestor
    from windowrag_pg.sources import SourceDocument
    from windowrag_pg.store.writer import delete_document

    rng = random.Random(seed)
    errors, operations = [], 0
    with connect(url, autocommit=True) as conn:
        ingestor = Ingestor(conn, collection=collection, embedder=get_embedder(threads=1))
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            doc = rng.randrange(n_docs)
            try:
                if rng.random() < 0.2:
                    delete_document(conn, ingestor.collection, f"doc-{doc}")
                else:
                    version = rng.randrange(1_000_000)
                    report = ingestor.ingest([SourceDocument(external_id=f"doc-{doc}", format="text",
                                                             text=document_text(doc, version))])
                    errors += [f"{e.name}: {e.message}" for e in report.errors]
                operations += 1
            except Exception as exc:  # noqa: BLE001 - every error is a test failure, reported back
                errors.append(repr(exc))
    queue.put(("writer", operations, errors))


def reader(url: str, collection: str, seed: int, seconds: float, vectors, queue) -> None:
    import re

    import numpy as np

    from windowrag_pg.db.connection import connect
    from windowrag_pg.retrieve.retriever import Retriever

    rng = random.Random(seed)
    errors, searches, mixed = [], 0, []
    with connect(url, autocommit=True) as conn:
        retriever = Retriever(conn, collection=collection)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            query, vector = vectors[rng.randrange(len(vectors))]
            try:
                result = retriever.search(query, k=5, window=3, query_embedding=np.asarray(vector, dtype=np.float32))
                searches += 1
                for context in result.contexts:
                    versions = set(re.findall(r"Version(\d+)", context.text))
                    if len(versions) > 1:
                        mixed.append((context.document_id, sorted(versions)))
            except Exception as exc:  # noqa: BLE001
                errors.append(repr(exc))
    queue.put(("reader", searches, errors + [f"mixed versions {m}" for m in mixed]))
