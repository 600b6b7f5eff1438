"""Retrieval in SQL on the real database with the real model: BM25 against rank-bm25,
filters, clamping, merging, and the SQL functions against the Python API."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from windowrag_pg.ingest import Ingestor
from windowrag_pg.retrieve.filters import FilterError
from windowrag_pg.retrieve.retriever import QueryError, Retriever, SearchOptions
from windowrag_pg.sources import SourceDocument

QUERIES = [
    "Confidential Information shall only include technical information.",
    "The Receiving Party may share information with employees and consultants.",
    "return or destroy copies of confidential information",
    "governing law jurisdiction courts",
]


def bm25_reference(conn, collection, document_ids=None):
    """rank-bm25's BM25Okapi over the same lexemes (each lexeme repeated tf times), with the
    non-negative IDF ln(1 + (N − df + 0.5)/(df + 0.5)) that windowrag uses."""
    rank_bm25 = pytest.importorskip("rank_bm25")

    class LuceneIdfBM25(rank_bm25.BM25Okapi):
        def _calc_idf(self, nd):
            for word, freq in nd.items():
                self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))

    # every sentence counts, also those whose tsvector is empty (stop words only): N and avgdl
    rows = conn.execute(
        "SELECT s.id, s.document_id, array_agg(u.lexeme ORDER BY u.lexeme), array_agg(cardinality(u.positions) ORDER BY u.lexeme)"
        " FROM windowrag.sentences s JOIN windowrag.collections c ON c.id = s.collection_id"
        " LEFT JOIN LATERAL unnest(s.tsv) u ON true"
        " WHERE c.name = %s GROUP BY s.id ORDER BY s.id", [collection]).fetchall()
    ids = [r[0] for r in rows]
    corpus = [[lex for lex, tf in zip(r[2], r[3]) if lex is not None for _ in range(tf)] for r in rows]
    model = LuceneIdfBM25(corpus, k1=1.2, b=0.75)
    return ids, [r[1] for r in rows], model


def test_bm25_equals_rank_bm25(conn, contractnli_collection):
    ids, doc_of, model = bm25_reference(conn, contractnli_collection)
    for query in QUERIES:
        lexemes = conn.execute("SELECT windowrag.query_lexemes('english', %s)", [query]).fetchone()[0]
        expected = model.get_scores(lexemes)
        got = conn.execute("SELECT sentence_id, score FROM windowrag.bm25_search(%s, %s, 20)",
                           [contractnli_collection, query]).fetchall()
        assert len(got) == 20
        position = {sid: i for i, sid in enumerate(ids)}
        for sentence_id, score in got:
            assert score == pytest.approx(expected[position[sentence_id]], rel=1e-6)
        # the top 20 are the reference's top 20 (ties aside)
        reference_top = sorted(expected, reverse=True)[:20]
        assert [s for _, s in got] == pytest.approx(reference_top, rel=1e-6)


def test_bm25_scores_stay_exact_when_posting_lists_are_cut(conn, contractnli_collection):
    """With per_term_limit far below the document frequencies, candidates come from truncated
    lists and phase 2 must probe the terms each candidate was not listed under."""
    ids, _, model = bm25_reference(conn, contractnli_collection)
    position = {sid: i for i, sid in enumerate(ids)}
    for query in QUERIES:
        lexemes = conn.execute("SELECT windowrag.query_lexemes('english', %s)", [query]).fetchone()[0]
        expected = model.get_scores(lexemes)
        got = conn.execute(
            "SELECT sentence_id, score FROM windowrag.bm25_search(%s, %s, 10, per_term_limit => 3, shortlist_size => 30)",
            [contractnli_collection, query]).fetchall()
        assert len(got) == 10
        for sentence_id, score in got:
            assert score == pytest.approx(expected[position[sentence_id]], rel=1e-6)
        assert [score for _, score in got] == sorted((score for _, score in got), reverse=True)


def test_bm25_with_a_document_filter_scores_the_same(conn, contractnli_collection):
    ids, doc_of, model = bm25_reference(conn, contractnli_collection)
    document = doc_of[len(doc_of) // 2]
    query = QUERIES[1]
    lexemes = conn.execute("SELECT windowrag.query_lexemes('english', %s)", [query]).fetchone()[0]
    expected = model.get_scores(lexemes)
    in_doc = sorted((expected[i] for i, d in enumerate(doc_of) if d == document and expected[i] > 0), reverse=True)
    got = conn.execute("SELECT sentence_id, score FROM windowrag.bm25_search(%s, %s, 10, ARRAY[%s]::bigint[])",
                       [contractnli_collection, query, document]).fetchall()
    assert [s for _, s in got] == pytest.approx(in_doc[:10], rel=1e-6)
    assert {doc_of[ids.index(sid)] for sid, _ in got} == {document}


def test_selective_filter_still_returns_k_contexts(conn, contractnli_collection, embedder):
    # the contract closest to 1% of the collection's sentences
    document_key, external_id, fraction = conn.execute(
        "SELECT d.id, d.external_id, d.sentence_count::float / sum(d.sentence_count) OVER () AS share"
        " FROM windowrag.documents d JOIN windowrag.collections c ON c.id = d.collection_id WHERE c.name = %s"
        " ORDER BY abs(d.sentence_count::float / sum(d.sentence_count) OVER () - 0.01) LIMIT 1",
        [contractnli_collection]).fetchone()
    assert 0.005 < fraction < 0.015
    query = "The agreement is governed by the laws of a state."
    vector = embedder.embed_query(query)
    # ef_search = 10: a plain post-filtered HNSW scan would keep ~1% of 10 rows; the iterative
    # scan keeps reading the graph until 10 rows of the document are found.
    rows = conn.execute("SELECT sentence_id FROM windowrag.dense_search(%s, %s, 10, ARRAY[%s]::bigint[], 10)",
                        [contractnli_collection, vector, document_key]).fetchall()
    assert len(rows) == 10
    retriever = Retriever(conn, embedder=embedder, collection=contractnli_collection)
    for mode in ("dense", "hybrid"):
        result = retriever.search(query, k=5, window=0, mode=mode, filters={"document_id": external_id},
                                  ef_search=10, candidates=10)
        assert {c.document_id for c in result.contexts} == {external_id}
        assert sum(len(c.hits) for c in result.contexts) >= 5, mode


def test_contexts_never_cross_a_section_boundary(conn, collection_name, embedder, eval_dir):
    pages = [json.loads(line) for line in (eval_dir / "handbook" / "documents.jsonl").open()]
    chosen = [p for p in pages if p["text"].count("\n## ") >= 6][:6]
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id=p["id"], format="markdown", text=p["text"], title=p["title"]) for p in chosen])
    retriever = Retriever(conn, embedder=embedder, collection=collection_name)
    crossing = 0
    for query in ("How do I request time off?", "Who approves expenses?", "What is the on-call process?",
                  "How are goals set each quarter?", "Where is the team calendar?"):
        for context in retriever.search(query, k=8, window=5).contexts:
            sections = conn.execute(
                "SELECT count(DISTINCT s.section_id) FROM windowrag.sentences s WHERE s.document_id = %s"
                " AND s.ordinal BETWEEN %s AND %s", [context.document_key, context.first_ordinal, context.last_ordinal]
            ).fetchone()[0]
            crossing += sections != 1
            section_range = conn.execute(
                "SELECT x.start_char, x.end_char FROM windowrag.sentences s JOIN windowrag.sections x ON x.id = s.section_id"
                " WHERE s.document_id = %s AND s.ordinal = %s", [context.document_key, context.first_ordinal]).fetchone()
            assert section_range[0] <= context.start_char and context.end_char <= section_range[1]
    assert crossing == 0


ZEBRA_TEXT = (
    "Filler about accounting rules comes first. Another filler sentence about invoices. "
    "Zebras migrate across the plains in spring. Zebras cross the river in large herds. "
    "A sentence about spreadsheets follows. More words on tax returns. Even more on budgets. "
    "Yet another sentence on payroll. Then one on audits. The last one on ledgers."
)


def test_adjacent_hits_merge_into_one_context(conn, collection_name, embedder):
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id="zebra", format="text", text=ZEBRA_TEXT)])
    retriever = Retriever(conn, embedder=embedder, collection=collection_name)
    result = retriever.search("zebras", k=5, window=1, mode="bm25")
    assert len(result.contexts) == 1
    context = result.contexts[0]
    assert sorted(h.sentence_ordinal for h in context.hits) == [2, 3]
    assert (context.first_ordinal, context.last_ordinal) == (1, 4)
    assert context.text.count("Zebras") == 2
    assert context.text == ZEBRA_TEXT[context.start_char:context.end_char]


def test_windows_never_send_a_sentence_twice(conn, contractnli_collection, embedder):
    retriever = Retriever(conn, embedder=embedder, collection=contractnli_collection)
    for query in QUERIES:
        contexts = retriever.search(query, k=10, window=3).contexts
        seen: set[tuple[int, int]] = set()
        for c in contexts:
            span = {(c.document_key, o) for o in range(c.first_ordinal, c.last_ordinal + 1)}
            assert not (seen & span)
            seen |= span
        assert [c.score for c in contexts] == sorted((c.score for c in contexts), reverse=True)


def test_segments_stop_at_the_sentence_budget(conn, contractnli_collection, embedder):
    """In one scoped contract, hits keep landing next to each other and merge into long segments;
    max_sentences holds all segments together to that many sentences."""
    retriever = Retriever(conn, embedder=embedder, collection=contractnli_collection)
    external_id = conn.execute(
        "SELECT d.external_id FROM windowrag.documents d JOIN windowrag.collections c ON c.id = d.collection_id"
        " WHERE c.name = %s ORDER BY d.sentence_count DESC LIMIT 1", [contractnli_collection]).fetchone()[0]
    scope = {"document_id": external_id}

    def sentences(contexts):
        return sum(c.last_ordinal - c.first_ordinal + 1 for c in contexts)

    unbounded = []
    for query in QUERIES:
        contexts = retriever.search(query, k=5, window=3, filters=scope, candidates=50, max_sentences=35).contexts
        assert contexts and sentences(contexts) <= 35
        unbounded.append(sentences(retriever.search(query, k=5, window=3, filters=scope, candidates=50).contexts))
        tight = retriever.search_with(query, SearchOptions(k=5, window=3, candidates=50, max_sentences=9),
                                      filters=scope).contexts
        assert tight and sentences(tight) <= 9
        # every reported hit lies inside its context
        for c in contexts + tight:
            assert all(c.first_ordinal <= h.sentence_ordinal <= c.last_ordinal for h in c.hits)
    assert max(unbounded) > 35  # without a budget (the default) they grow: the budget is what kept them small
    with pytest.raises(QueryError, match="max_sentences"):
        retriever.search_with(QUERIES[0], SearchOptions(max_sentences=0))


def test_sql_function_equals_python_api(conn, contractnli_collection, embedder):
    retriever = Retriever(conn, embedder=embedder, collection=contractnli_collection)
    for query in QUERIES:
        vector = embedder.embed_query(query)
        api = retriever.search(query, k=5, window=2, query_embedding=vector)
        rows = conn.execute(
            "SELECT external_id, start_char, end_char, text, score FROM windowrag.search_windows(%s, %s, %s, 5, 2)",
            [contractnli_collection, query, vector]).fetchall()
        assert [(c.document_id, c.start_char, c.end_char, c.text) for c in api.contexts] == [r[:4] for r in rows]
        assert [c.score for c in api.contexts] == pytest.approx([r[4] for r in rows])


def test_hostile_filters_and_queries(conn, contractnli_collection, embedder):
    retriever = Retriever(conn, embedder=embedder, collection=contractnli_collection)
    for key in ("metadata.a'; DROP TABLE windowrag.documents; --", "metadata.$$", "metadata.a b", "password"):
        with pytest.raises(FilterError, match="filter key"):
            retriever.search("confidential", filters={key: "x"})
    for value in ("'; DROP TABLE windowrag.documents; --", "$$ x $$", "/* */ OR 1=1"):
        assert retriever.search("confidential", filters={"metadata.source": value}).contexts == []
    with pytest.raises(QueryError, match="empty"):
        retriever.search("   ")
    with pytest.raises(QueryError, match="shape"):
        retriever.search("x", query_embedding=np.ones(12, dtype=np.float32))
    with pytest.raises(QueryError, match="NaN"):
        retriever.search("x", query_embedding=np.full(embedder.dimension, np.nan, dtype=np.float32))
    assert conn.execute("SELECT count(*) FROM windowrag.documents").fetchone()[0] >= 61


def test_metadata_filters(conn, collection_name, embedder):
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest([
        SourceDocument(external_id=f"d{i}", format="text", text=f"Document number {i} talks about apples.",
                       metadata={"year": 2020 + i, "lang": "en" if i % 2 else "fr"}) for i in range(4)])
    retriever = Retriever(conn, embedder=embedder, collection=collection_name)

    def ids(filters):
        return sorted(c.document_id for c in retriever.search("apples", k=10, window=0, filters=filters).contexts)

    assert ids({"metadata.lang": "en"}) == ["d1", "d3"]
    assert ids({"metadata.year": {"gte": 2021, "lt": 2023}}) == ["d1", "d2"]
    assert ids({"metadata.year": {"in": [2020, 2023]}}) == ["d0", "d3"]
    assert ids({"document_id": {"in": ["d2", "nope"]}}) == ["d2"]
    assert ids({"metadata.lang": "en", "metadata.year": {"gt": 2021}}) == ["d3"]


def test_cli_query_json(db_url, contractnli_collection):
    out = subprocess.run(
        [sys.executable, "-m", "windowrag_pg.cli", "--database-url", db_url, "query",
         "Receiving Party shall not disclose Confidential Information", "--collection", contractnli_collection,
         "--json", "--k", "3"], capture_output=True, text=True, check=True, timeout=300).stdout
    data = json.loads(out)
    assert data["query"].startswith("Receiving Party")
    assert len(data["contexts"]) == 3
    context = data["contexts"][0]
    assert {"document_id", "title", "section_path", "start_char", "end_char", "text", "score", "hits"} <= set(context)
    assert {"sentence_ordinal", "dense_rank", "bm25_rank", "rrf_score"} <= set(context["hits"][0])


MARKDOWN_PAGES = [
    "# Cranes\n\nThe harbour crane lifts containers. It runs on rails.\n\n## Safety\n\n- Inspect the crane cable weekly.\n"
    "- Stop the crane in high wind.\n\n| part | check |\n|---|---|\n| cable | weekly |\n\nCrane logs are kept *for a year*.\n",
    "Barges carry grain.  Two spaces follow this sentence.\n\n\nThree line breaks before this crane sentence.\n",
]
WINDOW_ROWS = """SELECT document_id, first_ordinal, last_ordinal, start_char, end_char, text
FROM windowrag.search_windows(%s, %s, %s, k => 3, window_size => %s, clamp => %s)"""


def test_window_text_is_the_documents_own_characters(conn, collection_name, embedder):
    """search_windows gives each segment's text from its sentences and the gaps between them
    (migration 0014): exactly the document's characters, across markup and sections; sentences
    stored without gaps (before 0014) get the same text, cut from the document."""
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id=f"page{i}", format="markdown", text=text) for i, text in enumerate(MARKDOWN_PAGES)])
    texts = dict(conn.execute("SELECT d.id, d.text FROM windowrag.documents d JOIN windowrag.collections c"
                              " ON c.id = d.collection_id WHERE c.name = %s", [collection_name]).fetchall())
    cases = [(query, window, clamp) for query in ("crane cable", "grain barges", "crane logs")
             for window, clamp in ((1, "section"), (3, "document"), (20, "document"))]

    def windows():
        return [conn.execute(WINDOW_ROWS, [collection_name, query, embedder.embed_query(query), window, clamp]).fetchall()
                for query, window, clamp in cases]
    with_gaps = windows()
    for rows in with_gaps:
        assert rows and all(text == texts[doc][start:end] for doc, _, _, start, end, text in rows)
    assert any("\n\n## Safety\n\n- " in text for rows in with_gaps for *_, text in rows)  # markup between sentences
    assert conn.execute("SELECT count(*) FROM windowrag.sentences s JOIN windowrag.collections c ON c.id = s.collection_id"
                        " WHERE c.name = %s AND s.gap IS NULL", [collection_name]).fetchone()[0] == 0
    conn.execute("UPDATE windowrag.sentences SET gap = NULL WHERE collection_id ="
                 " (SELECT id FROM windowrag.collections WHERE name = %s) AND ordinal %% 2 = 0", [collection_name])
    assert windows() == with_gaps


def test_repeated_cli_filters_combine_instead_of_keeping_the_last() -> None:
    """Found by a tester: `--filter document_id=A --filter document_id=B` searched B alone (the
    first was dropped without a word). One key's values match any of them; its ranges all hold;
    different keys are AND-ed; a value and a range on one key are refused."""
    from windowrag_pg.cli import _cli_filters
    from windowrag_pg.retrieve.filters import FilterError, combine_cli_filters

    assert _cli_filters(["document_id=A", "document_id=B", "lang=en"]) == {
        "document_id": {"in": ["A", "B"]}, "metadata.lang": "en"}
    assert _cli_filters(["year>=2020", "year<2024"]) == {"metadata.year": {"gte": 2020, "lt": 2024}}
    assert combine_cli_filters([("source", {"in": ["a.md", "/x/a.md"]}), ("source", "b.md"), ("source", "a.md")]) == {
        "source": {"in": ["a.md", "/x/a.md", "b.md"]}}
    with pytest.raises(FilterError, match="'metadata.year' is given both a value and a range"):
        _cli_filters(["year=2020", "year>=2021"])
