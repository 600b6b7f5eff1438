"""The LlamaIndex and LangChain retrievers with the real frameworks, offline: their contexts and
metadata equal windowrag_pg.search's; they run inside a RetrieverQueryEngine / an LCEL chain."""
from __future__ import annotations

import asyncio
import socket
from importlib import resources
from pathlib import Path

import pytest

import windowrag_pg
from windowrag_pg.db.connection import connect
from windowrag_pg.retrieve.filters import FilterError
from windowrag_pg.retrieve.retriever import QueryError

from .conftest import require_optional

pytestmark = pytest.mark.integrations

QUERIES = ["How much does the company pay of the dental plan?", "What is the learning budget?",
           "How do I report a security incident?", "parental leave"]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No network: a framework that tried to download (NLTK data, tiktoken encodings, models)
    fails the test. The database is reached over a Unix socket by libpq, not Python sockets."""
    connect = socket.socket.connect

    def refuse(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            raise OSError(f"network access attempted during an offline test: {address}")
        return connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", refuse)


def sample_texts() -> dict[str, str]:
    folder = resources.files("windowrag_pg.samples")
    return {name: (folder / name).read_text(encoding="utf-8") for name in ("handbook.md", "security.md")}


@pytest.fixture(scope="module")
def llama_collection(db_url):
    """The samples ingested as LlamaIndex Documents (through the adapter's ingest_documents)."""
    core = require_optional("llama_index.core", "llama-index-core")
    from windowrag_pg.db.connection import connect
    from windowrag_pg.integrations.llama_index import ingest_documents

    documents = [core.Document(id_=name, text=text, metadata={"file_name": name})
                 for name, text in sample_texts().items()]
    with connect(db_url, autocommit=True) as conn:
        report = ingest_documents(documents, connection=conn, collection="llama_samples")
    assert (report.added, report.errors) == (2, [])
    return "llama_samples"


def expected(query, collection, db_url, **options):
    def metadata(c):
        # the offsets of a list's lead-in or a table's header sent in front, when there is one
        lead = ({"lead_start_char": c.citation.lead_start_char, "lead_end_char": c.citation.lead_end_char}
                if c.citation.lead_start_char is not None else {})
        return {"document_id": c.citation.document_id, "title": c.citation.title,
                "section_path": list(c.citation.section_path), "start_char": c.citation.start_char,
                "end_char": c.citation.end_char, "score": c.score, **lead}

    return [(c.text, metadata(c)) for c in windowrag_pg.search(query, collection=collection, url=db_url,
                                                               **options).contexts]


def test_llama_index_retriever_returns_the_contexts_of_search(db_url, conn, llama_collection):
    from windowrag_pg.integrations.llama_index import WindowragRetriever

    by_url = WindowragRetriever(collection=llama_collection, url=db_url, k=3, window=1)
    on_conn = WindowragRetriever(collection=llama_collection, connection=conn, k=3, window=1)
    for query in QUERIES:
        want = expected(query, llama_collection, db_url, k=3, window=1)
        assert want
        for retriever in (by_url, on_conn):
            nodes = retriever.retrieve(query)
            assert [(n.node.get_content(), n.node.metadata) for n in nodes] == want
            assert [n.score for n in nodes] == [m["score"] for _, m in want]
    # the formats come from the file names' suffixes (markdown sections), a Markdown document's
    # title from its first heading, as a file's ingest titles it
    node = by_url.retrieve("dental plan premium")[0].node
    assert node.metadata["title"] == "Acme Robotics employee handbook" and node.metadata["section_path"][-1] == "Dental"


def test_llama_index_query_engine_uses_the_retriever_unchanged(db_url, llama_collection):
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from windowrag_pg.integrations.llama_index import WindowragRetriever

    retriever = WindowragRetriever(collection=llama_collection, url=db_url, k=2, token_budget=200)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())  # MockLLM echoes its prompt
    query = "What is the learning budget?"
    response = engine.query(query)
    want = expected(query, llama_collection, db_url, k=2, token_budget=200)
    assert [n.node.get_content() for n in response.source_nodes] == [text for text, _ in want]
    assert "1,000 USD per calendar year" in str(response)  # the context reached the LLM's prompt
    assert "start_char" not in str(response)  # offsets are for citations, not for the LLM
    aresponse = asyncio.run(engine.aquery(query))
    assert [n.node.get_content() for n in aresponse.source_nodes] == [text for text, _ in want]


def test_langchain_retriever_in_an_lcel_chain(db_url, conn, llama_collection):
    require_optional("langchain_core", "langchain-core")
    from langchain_core.runnables import RunnableLambda

    from windowrag_pg.integrations.langchain import WindowragRetriever

    retriever = WindowragRetriever(collection=llama_collection, connection=conn, k=3, rerank=True)
    for query in QUERIES[:2]:
        want = expected(query, llama_collection, db_url, k=3, rerank=True)
        documents = retriever.invoke(query)
        assert [(d.page_content, d.metadata) for d in documents] == want
        adocuments = asyncio.run(retriever.ainvoke(query))
        assert [(d.page_content, d.metadata) for d in adocuments] == want

    def cite(documents):
        return "\n".join(f"[{d.metadata['document_id']} {d.metadata['start_char']}-{d.metadata['end_char']}] "
                         f"{d.page_content}" for d in documents)

    chain = WindowragRetriever(collection=llama_collection, url=db_url, k=1) | RunnableLambda(cite)
    text = chain.invoke("parental leave")
    assert text.startswith("[handbook.md ") and "16 weeks at full pay" in text
    assert asyncio.run(chain.ainvoke("parental leave")) == text
    assert chain.batch(["parental leave", "learning budget"])[0] == text


def test_async_retrieval_on_an_async_pool_and_by_url(db_url, llama_collection):
    require_optional("langchain_core", "langchain-core")
    from psycopg_pool import AsyncConnectionPool

    from windowrag_pg.integrations.langchain import WindowragRetriever as LangChainRetriever
    from windowrag_pg.integrations.llama_index import WindowragRetriever as LlamaRetriever

    want = {q: expected(q, llama_collection, db_url, k=2) for q in QUERIES}

    async def main():
        async with AsyncConnectionPool(db_url, min_size=1, max_size=2) as pool:
            retriever = LangChainRetriever(collection=llama_collection, connection=pool, k=2)
            documents = await asyncio.gather(*(retriever.ainvoke(q) for q in QUERIES))
        nodes = await asyncio.gather(*(LlamaRetriever(collection=llama_collection, url=db_url, k=2).aretrieve(q)
                                       for q in QUERIES))
        return documents, nodes

    documents, nodes = asyncio.run(main())
    assert [[(d.page_content, d.metadata) for d in found] for found in documents] == [want[q] for q in QUERIES]
    assert [[(n.node.get_content(), n.node.metadata) for n in found] for found in nodes] == [want[q] for q in QUERIES]


def test_langchain_documents_are_ingested(db_url, collection_name):
    require_optional("langchain_core", "langchain-core")
    from langchain_core.documents import Document

    from windowrag_pg.integrations.langchain import WindowragRetriever, ingest_documents

    documents = [Document(id=name, page_content=text, metadata={"source": name, "lang": "en"})
                 for name, text in sample_texts().items()]
    documents.append(Document(id="", page_content="No id and no source.", metadata={}))
    report = ingest_documents(documents, connection=db_url, collection=collection_name)
    assert report.added == 2 and [(e.name, e.message) for e in report.errors] == [
        ("document 3", "has neither an id nor metadata 'source' to name it by")]
    retriever = WindowragRetriever(collection=collection_name, url=db_url, k=1,
                                   filters={"metadata.lang": "en"})
    [document] = retriever.invoke("Who pays the dental premium?")
    assert document.metadata["document_id"] == "handbook.md"


def test_langchain_pages_of_one_source_are_each_kept(db_url, collection_name):
    """A PDF loader's pages (or a splitter's chunks) share metadata 'source' and have no id: the
    source as the id made each page replace the one before (2 of 3 pages lost, no error)."""
    require_optional("langchain_core", "langchain-core")
    from langchain_core.documents import Document

    from windowrag_pg.integrations.langchain import ingest_documents

    pages = [Document(page_content=f"Page {i} talks about topic {i}. Second sentence of page {i}.",
                      metadata={"source": "report.pdf", "page": i}) for i in range(3)]
    report = ingest_documents(pages, connection=db_url, collection=collection_name)
    assert report.added == 3 and not report.errors
    again = ingest_documents(pages, connection=db_url, collection=collection_name)  # the same ids again
    assert again.unchanged == 3 and again.added == again.replaced == 0
    with connect(db_url) as conn:
        ids = [r["id"] for r in windowrag_pg.list_documents(conn, collection=collection_name)]
    assert sorted(ids) == ["report.pdf", "report.pdf#1", "report.pdf#2"]


def test_bad_options_fail_when_the_retriever_is_built():
    from windowrag_pg.integrations.langchain import WindowragRetriever as LangChainRetriever
    from windowrag_pg.integrations.llama_index import WindowragRetriever as LlamaRetriever

    for retriever in (LangChainRetriever, LlamaRetriever):
        with pytest.raises(QueryError, match="unknown search option.*top_k"):
            retriever(collection="x", top_k=3)
        with pytest.raises(QueryError, match="rerank_candidates"):
            retriever(collection="x", rerank_candidates=0)
        with pytest.raises(QueryError, match="mode must be one of hybrid, dense, bm25, not 'hibrid'"):
            retriever(collection="x", mode="hibrid")
        with pytest.raises(FilterError, match="unknown filter key 'bogus'"):
            retriever(collection="x", filters={"bogus": 1})


def test_a_retrievers_repr_and_serialised_forms_hide_the_database_password():
    """repr, LangChain's dumpd/dumps (what tracing records) and model_dump showed url= whole."""
    require_optional("langchain_core", "langchain-core")
    from langchain_core.load import dumpd, dumps

    from windowrag_pg.integrations.langchain import WindowragRetriever as LangChainRetriever
    from windowrag_pg.integrations.llama_index import WindowragRetriever as LlamaRetriever

    url, read_url = "postgresql://app:s3cretpw@db.example/prod", "host=replica user=app password=r3plicapw"
    chain = LangChainRetriever(collection="docs", url=url, read_url=read_url, k=3)
    llama = LlamaRetriever(collection="docs", url=url, read_url=read_url, k=3)
    shown = [repr(chain), str(dumpd(chain)), dumps(chain), str(chain.model_dump()), chain.model_dump_json(),
             repr(llama.windowrag), repr(llama)]
    assert not [text for text in shown if "s3cretpw" in text or "r3plicapw" in text]
    assert "url='postgresql://app:***@db.example/prod'" in repr(chain)
    assert "read_url='host=replica user=app password=***'" in repr(llama.windowrag)
    assert (chain.windowrag.url, llama.windowrag.read_url) == (url, read_url)  # still what connects


def test_one_document_or_a_string_given_to_ingest_documents_is_refused_by_name(db_url, collection_name):
    """ingest_documents(doc) iterated the Document's fields (AttributeError: 'tuple' object has no
    attribute 'id'); a string or a dict in place of a Document failed the same way."""
    require_optional("langchain_core", "langchain-core")
    from langchain_core.documents import Document as LangChainDocument
    from llama_index.core.schema import Document as LlamaDocument

    from windowrag_pg.integrations.langchain import ingest_documents as langchain_ingest
    from windowrag_pg.integrations.llama_index import ingest_documents as llama_ingest

    for ingest, document, label in ((langchain_ingest, LangChainDocument(page_content="One. Two.", id="one"),
                                     "LangChain Documents"),
                                    (llama_ingest, LlamaDocument(text="One. Two.", id_="one"), "LlamaIndex Documents")):
        for alone in (document, "One. Two."):
            with pytest.raises(TypeError, match=rf"ingest_documents takes a list of {label}, not one "
                                                rf"{type(alone).__name__}: ingest_documents\(\[document\]\)"):
                ingest(alone, connection=db_url, collection=collection_name)
        with pytest.raises(TypeError, match=rf"ingest_documents takes {label}; item 2 is a dict "):
            ingest([document, {"text": "x", "id": "y"}], connection=db_url, collection=collection_name)
    with connect(db_url) as conn:  # refused as the ingest read its first documents: none written
        assert windowrag_pg.list_documents(conn, collection=collection_name) == []


def test_the_readme_llama_index_ingest_keeps_the_files_source(db_url, collection_name):
    """The README's snippet: a file ingested, then its text as a LlamaIndex Document under the
    file's id with metadata file_name only; a source= filter on the file's path found nothing after."""
    from llama_index.core import Document

    from windowrag_pg.integrations.llama_index import ingest_documents

    path = resources.files("windowrag_pg.samples") / "handbook.md"
    with connect(db_url, autocommit=True) as conn:
        windowrag_pg.Ingestor(conn, collection=collection_name).ingest(windowrag_pg.iter_sources([str(path)]))
    report = ingest_documents([Document(id_=str(Path(str(path)).resolve()), text=path.read_text(encoding="utf-8"),
                                        metadata={"file_name": path.name})], connection=db_url, collection=collection_name)
    assert (report.metadata_updated, report.added, report.replaced) == (1, 0, 0)
    found = windowrag_pg.search("learning budget", collection=collection_name, url=db_url,
                                filters={"source": str(Path(str(path)).resolve())})
    assert [c.citation.document_id for c in found.contexts][:1] == [str(Path(str(path)).resolve())]
