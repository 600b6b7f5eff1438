"""Hostile input corpus: every case of tests/data/hostile/manifest.json through the public API.

Each case gives a clear error (a windowrag error naming the problem, a per-document error in
the ingest report, or a windowrag/pgvector error from the SQL functions) or a correct result
(checked by the case's property). Around every case the baseline collection, ingested once per
module, must stay exactly the same (rows, hashes, BM25 statistics), and the database must still
answer a search. Big inputs (50 MB, 1M characters, 5 MB of metadata) are generated at test time
from the recipes in the manifest; nothing big is checked in.

Cases marked "slow" in the manifest run with ``-m slow``; cases marked "xfail" wait for a patch
outside the files this corpus may change (the reason names it).
"""
from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql

from windowrag_pg.embed.base import Embedder
from windowrag_pg.ingest import Ingestor
from windowrag_pg.parse import decode_text, parse_document
from windowrag_pg.pipeline import Pipeline
from windowrag_pg.retrieve.retriever import Retriever
from windowrag_pg.sources import SourceDocument, iter_sources
from windowrag_pg.split.sentences import split_units
from windowrag_pg.store.collections import get_collection
from windowrag_pg.store.writer import delete_document

DATA = Path(__file__).resolve().parent / "data" / "hostile"
MANIFEST = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
CASES: list[dict] = MANIFEST["cases"]
KINDS = {"ingest", "query", "filter", "embedding", "metadata"}


def _params():
    for case in CASES:
        marks = []
        if case.get("slow"):
            marks.append(pytest.mark.slow)
        if case.get("xfail"):
            marks.append(pytest.mark.xfail(strict=True, reason=case["xfail"]))
        yield pytest.param(case, id=case["id"], marks=marks)


# --- baseline and its snapshot -------------------------------------------------------------

# One digest per table of everything stored for the baseline collection.
SNAPSHOT_SQL = """
WITH c AS (SELECT id FROM windowrag.collections WHERE name = %(name)s),
docs AS (SELECT d.* FROM windowrag.documents d JOIN c ON d.collection_id = c.id)
SELECT
 (SELECT row(c2.*)::text FROM windowrag.collections c2 JOIN c ON c2.id = c.id),
 (SELECT count(*) || ':' || md5(coalesce(string_agg(concat_ws('|', d.id, d.external_id, d.title, d.source, d.format,
        d.metadata::text, d.content_hash, md5(d.text), d.sentence_count, d.created_at, d.updated_at), E'\\n' ORDER BY d.id), ''))
    FROM docs d),
 (SELECT count(*) || ':' || md5(coalesce(string_agg(row(x.*)::text, E'\\n' ORDER BY x.id), ''))
    FROM windowrag.sections x JOIN docs d ON d.id = x.document_id),
 (SELECT count(*) || ':' || md5(coalesce(string_agg(concat_ws('|', s.id, s.document_id, s.section_id, s.ordinal, s.start_char,
        s.end_char, s.kind, md5(s.text), s.token_count, s.page, md5(s.embedding::text), md5(s.tsv::text), s.bm25_length),
        E'\\n' ORDER BY s.id), ''))
    FROM windowrag.sentences s JOIN c ON s.collection_id = c.id),
 (SELECT row(b.*)::text FROM windowrag.bm25_stats b JOIN c ON b.collection_id = c.id),
 (SELECT count(*) || ':' || md5(coalesce(string_agg(t.lexeme || '=' || t.df, ',' ORDER BY t.lexeme), ''))
    FROM windowrag.bm25_terms t JOIN c ON t.collection_id = c.id),
 (SELECT count(*) || ':' || md5(coalesce(string_agg(concat_ws('|', p.lexeme, p.sentence_id, p.tf, p.doc_length),
        ',' ORDER BY p.lexeme, p.sentence_id), ''))
    FROM windowrag.bm25_postings p JOIN c ON p.collection_id = c.id)
"""
SNAPSHOT_PARTS = ("collection", "documents", "sections", "sentences", "bm25_stats", "bm25_terms", "bm25_postings")

OFFSET_MISMATCHES = """
SELECT count(*) FROM windowrag.sentences s JOIN windowrag.documents d ON d.id = s.document_id
WHERE d.id = ANY(%s) AND substr(d.text, s.start_char + 1, s.end_char - s.start_char) <> s.text
"""


def snapshot(conn: psycopg.Connection, name: str) -> dict[str, str]:
    return dict(zip(SNAPSHOT_PARTS, conn.execute(SNAPSHOT_SQL, {"name": name}).fetchone()))


@dataclass(frozen=True)
class Baseline:
    name: str
    external_ids: frozenset[str]
    snapshot: dict[str, str]

    def document(self, suffix: str) -> str:
        return next(e for e in self.external_ids if e == suffix or e.endswith("/" + suffix))


def documents_outside(conn: psycopg.Connection, collection: str, keep: frozenset[str]) -> list[tuple[int, str]]:
    rows = conn.execute(
        "SELECT d.id, d.external_id FROM windowrag.documents d JOIN windowrag.collections c ON c.id = d.collection_id"
        " WHERE c.name = %s ORDER BY d.id", [collection]).fetchall()
    return [(key, external_id) for key, external_id in rows if external_id not in keep]


def remove_documents_outside(conn: psycopg.Connection, collection: str, keep: frozenset[str]) -> None:
    target = get_collection(conn, collection)
    for _key, external_id in documents_outside(conn, collection, keep):
        assert delete_document(conn, target, external_id)


@pytest.fixture(scope="module")
def baseline(db_url, embedder) -> Baseline:
    from windowrag_pg.db.connection import connect

    name = MANIFEST["baseline"]["collection"]
    with connect(db_url, autocommit=True) as connection:
        report = Ingestor(connection, collection=name, embedder=embedder).ingest(
            iter_sources([DATA / path for path in MANIFEST["baseline"]["files"]]))
        assert not report.errors, report.errors
        ids = frozenset(row[0] for row in connection.execute(
            "SELECT d.external_id FROM windowrag.documents d JOIN windowrag.collections c ON c.id = d.collection_id"
            " WHERE c.name = %s", [name]).fetchall())
        assert len(ids) == 3, ids
        return Baseline(name=name, external_ids=ids, snapshot=snapshot(connection, name))


def assert_usable(conn: psycopg.Connection, embedder: Embedder, base: Baseline) -> None:
    """The database still answers: a plain query finds the baseline handbook first."""
    assert conn.execute("SELECT 1").fetchone() == (1,)
    result = Retriever(conn, embedder=embedder, collection=base.name).search("dental plan for employees", k=2, window=1)
    assert result.contexts and result.contexts[0].document_id == base.document("handbook.md")


# --- generators: big or unprintable inputs are built at test time ------------------------------

WORDS = ("alpha beta gamma delta policy employee benefit contract party shall notice term data security "
         "access review report quarter budget office travel expense approval manager").split()
SYLLABLES = "ka lo mi nu pe ra si to vu xe zo bi".split()


def generate_text(recipe: dict) -> str:
    kind = recipe["recipe"]
    if kind == "repeat":
        unit, size = recipe["unit"], recipe["size_chars"]
        return (unit * (size // len(unit) + 1))[:size]
    if kind == "nested":
        depth = recipe["depth"]
        return recipe["open"] * depth + recipe["inner"] + recipe["close"] * depth
    if kind == "sentences":  # ~1 MB of varied Markdown, repeated to size (ASCII: bytes == characters)
        rnd = random.Random(7)
        parts: list[str] = []
        length = 0
        paragraph = 0
        while length < min(recipe["size_bytes"], 1 << 20):
            if paragraph % 200 == 0:
                parts.append(f"## Section {paragraph // 200}\n\n")
            sentences = (" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(6, 20))).capitalize() + "."
                         for _ in range(rnd.randint(2, 6)))
            parts.append(" ".join(sentences) + "\n\n")
            length += len(parts[-1])
            paragraph += 1
        block = "".join(parts)
        size = recipe["size_bytes"]
        return (block * (size // len(block) + 1))[:size]
    if kind == "words":  # distinct pseudo-words
        words = []
        for i in range(recipe["count"]):
            word, n = "", i
            for _ in range(4):
                word += SYLLABLES[n % len(SYLLABLES)]
                n //= len(SYLLABLES)
            words.append(word)
        return " ".join(words + ([recipe["extra"]] if recipe.get("extra") else []))
    if kind == "letters":
        letters = ["abcdefghijklmnopqrstuvwxyz"[i % 26] for i in range(recipe["count"])]
        return " ".join(letters + ([recipe["extra"]] if recipe.get("extra") else []))
    if kind == "huge_metadata":
        metadata: dict[str, Any] = {f"k{i}": f"v{i}" for i in range(recipe["keys"])}
        metadata["K" * recipe["long_key_chars"]] = "long key"
        used = len(json.dumps(metadata))
        metadata["filler"] = "y" * max(0, recipe["size_bytes"] - used - 200)
        return json.dumps({"id": "huge-metadata", "text": "A document with huge metadata. Its text is short.",
                           "metadata": metadata}) + "\n"
    raise AssertionError(f"unknown recipe {kind!r}")


def make_metadata(recipe: dict) -> dict:
    if "nested_depth" in recipe:
        value: Any = "leaf"
        for _ in range(recipe["nested_depth"]):
            value = {"k": value}
        return value
    if recipe.get("python_value") == "datetime":
        return {"when": datetime(2024, 1, 1, 12, 0)}
    if "float" in recipe:
        return {"score": float(recipe["float"])}
    raise AssertionError(f"unknown metadata recipe {recipe!r}")


def make_embedding(recipe: dict, embedder: Embedder) -> Any:
    if "values" in recipe:
        return list(recipe["values"])
    if "from_query" in recipe:
        vector = embedder.embed_query(recipe["from_query"]).astype(np.float64)
        if "scale" in recipe:
            vector = vector * recipe["scale"]
        if "set_first" in recipe:
            vector[0] = float(recipe["set_first"])
        if "reshape" in recipe:
            vector = vector.reshape(recipe["reshape"])
        return [float(x) for x in vector] if recipe.get("as_list") else vector
    fill, dim = recipe["fill"], recipe.get("dim", embedder.dimension)
    if fill is None or (isinstance(fill, str) and fill != "nan"):
        return [fill] * dim
    return np.full(dim, float(fill))


def make_filters(recipe: dict) -> dict:
    if "deep_key_parts" in recipe:
        return {"metadata." + ".".join(["a"] * recipe["deep_key_parts"]): 1}
    key = recipe["key"]
    if "float" in recipe:
        value = float(recipe["float"])
        return {key: {recipe["op"]: value}} if "op" in recipe else {key: value}
    if "in_count" in recipe:
        return {key: {"in": [f"v{i}" for i in range(recipe["in_count"])]}}
    if "string_chars" in recipe:
        return {key: "z" * recipe["string_chars"]}
    raise AssertionError(f"unknown filter recipe {recipe!r}")


def query_of(spec: dict) -> str:
    return generate_text(spec["query_generator"]) if "query_generator" in spec else spec["query"]


class FaultyEmbedder(Embedder):
    """The session's embedder, with its document vectors broken on purpose."""

    def __init__(self, inner: Embedder, fault: str) -> None:
        self.inner, self.fault = inner, fault
        self.model_id = inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def _embed(self, texts, *, batch_size, progress):
        vectors = np.array(self.inner.embed_documents(texts, batch_size=batch_size), dtype=np.float32)
        if self.fault == "nan":
            vectors[:, 3] = np.nan
        elif self.fault == "dim":
            vectors = vectors[:, :-1]
        return vectors

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)


# --- checks --------------------------------------------------------------------------------

def assert_clear_error(exc: BaseException, expected: str) -> None:
    """A windowrag error (a ValueError subclass defined in windowrag_pg) carrying the expected words."""
    clear = isinstance(exc, ValueError) and type(exc).__module__.startswith("windowrag_pg")
    assert clear, f"crash-style error {type(exc).__module__}.{type(exc).__name__}: {str(exc)[:300]}"
    assert expected in str(exc), f"{expected!r} not in {str(exc)[:300]!r}"


def check_report_error(report, expected: dict) -> None:
    assert len(report.errors) == 1, report.as_dict()["errors"]
    error = report.errors[0]
    assert expected["error"] in error.message, f"{expected['error']!r} not in {error.message[:300]!r}"
    if "error_line" in expected:
        assert error.name.endswith(f":{expected['error_line']}"), error.name
    assert report.added == expected.get("added", 0), report.as_dict()
    assert report.replaced == 0


def check_stored(conn, embedder, report, expected: dict, *, collection: str, keep: frozenset[str],
                 input_text: str | None, input_metadata: dict | None) -> None:
    assert not report.errors, report.as_dict()["errors"]
    assert report.added == expected.get("added", 1), report.as_dict()
    new = documents_outside(conn, collection, keep)
    assert len(new) == report.added, new
    keys = [key for key, _ in new]
    assert conn.execute(OFFSET_MISMATCHES, [keys]).fetchone()[0] == 0
    texts = [row[0] for row in conn.execute(
        "SELECT s.text FROM windowrag.sentences s WHERE s.document_id = ANY(%s) ORDER BY s.document_id, s.ordinal",
        [keys]).fetchall()]
    assert texts and all(t.strip() for t in texts)
    stored_text = conn.execute("SELECT string_agg(text, E'\\n') FROM windowrag.documents WHERE id = ANY(%s)", [keys]).fetchone()[0]
    if expected.get("text_equals_file"):
        assert stored_text == input_text
    for fragment in expected.get("contains", []):
        assert any(fragment in t for t in texts), f"{fragment!r} is in no stored unit"
    for fragment in expected.get("not_contains", []):
        assert fragment not in stored_text, f"{fragment!r} was stored"
    if "heading_path_contains" in expected:
        paths = [row[0] for row in conn.execute(
            "SELECT heading_path FROM windowrag.sections WHERE document_id = ANY(%s)", [keys]).fetchall()]
        assert any(expected["heading_path_contains"] in path for path in paths), paths
    if "max_unit_chars" in expected:
        assert max(len(t) for t in texts) <= expected["max_unit_chars"]
    if "min_units" in expected:
        assert len(texts) >= expected["min_units"]
    if expected.get("bm25_length_zero"):
        lengths = conn.execute("SELECT bm25_length FROM windowrag.sentences WHERE document_id = ANY(%s)", [keys]).fetchall()
        assert all(length == 0 for (length,) in lengths)
    if expected.get("metadata_roundtrip"):
        stored = conn.execute("SELECT metadata FROM windowrag.documents WHERE id = %s", [keys[0]]).fetchone()[0]
        assert stored == input_metadata
    if "search" in expected:
        spec = expected["search"]
        result = Retriever(conn, embedder=embedder, collection=collection).search(
            spec["query"], mode=spec.get("mode", "hybrid"), filters=spec.get("filters"), k=5, window=1)
        found = {c.document_id for c in result.contexts}
        assert found & {external_id for _, external_id in new}, (found, new)
        check_context_slices(conn, [(c.document_key, c.start_char, c.end_char, c.text) for c in result.contexts])


def check_context_slices(conn, contexts: list[tuple[int, int, int, str]]) -> None:
    """Every returned context is the exact slice of its stored document."""
    for key, start, end, text in contexts:
        stored = conn.execute("SELECT substr(text, %s + 1, %s) FROM windowrag.documents WHERE id = %s",
                              [start, end - start, key]).fetchone()[0]
        assert stored == text


def check_results(conn, embedder, base: Baseline, spec: dict, expected: dict, contexts: list[tuple]) -> None:
    """contexts: (document_id, document_key, start, end, text, first_ordinal, last_ordinal)."""
    check_context_slices(conn, [(key, start, end, text) for _, key, start, end, text, _, _ in contexts])
    ids = [c[0] for c in contexts]
    assert len(ids) <= max(spec.get("options", {}).get("k", 5), 5)
    if "count" in expected:
        assert len(contexts) == expected["count"], ids
    if "top_document" in expected:
        assert ids and ids[0] == base.document(expected["top_document"]), ids
    if "only_documents" in expected:
        assert ids and set(ids) == set(expected["only_documents"]), ids
    if "same_as_query" in expected:
        reference = Retriever(conn, embedder=embedder, collection=base.name).search(
            expected["same_as_query"], mode=spec.get("mode", "hybrid"), filters=spec.get("filters"))
        assert [(c[0], c[5], c[6]) for c in contexts] == [
            (c.document_id, c.first_ordinal, c.last_ordinal) for c in reference.contexts]


# --- runners, one per kind of input ------------------------------------------------------------

def run_ingest(case: dict, conn, embedder, base: Baseline, tmp_path: Path) -> None:
    spec, expected = case["input"], case["expected"]
    collection = spec.get("collection", base.name)
    keep = base.external_ids if collection == base.name else frozenset()
    input_text = input_metadata = None
    if spec["via"] == "files":
        if "generator" in spec:
            path = tmp_path / spec["name"]
            path.write_text(generate_text(spec["generator"]), encoding="utf-8")
        else:
            path = DATA / spec["file"]
        if path.suffix not in (".jsonl", ".pdf"):
            try:
                input_text = decode_text(path.read_bytes(), path.name)
            except ValueError:
                pass
        if path.suffix == ".jsonl" and expected.get("metadata_roundtrip"):
            input_metadata = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["metadata"]
        ingestor = Ingestor(conn, collection=collection, embedder=embedder)
        sources = iter_sources([path])
    else:
        fields = dict(spec["document"])
        if "text_generator" in spec:
            fields["text"] = generate_text(spec["text_generator"])
        if "metadata_generator" in spec:
            fields["metadata"] = make_metadata(spec["metadata_generator"])
        if spec.get("text_as_bytes"):
            fields["text"] = fields["text"].encode()
        input_text, input_metadata = fields.get("text"), fields.get("metadata")
        inner = embedder if spec["via"] == "document" else FaultyEmbedder(embedder, spec["fault"])
        ingestor = Ingestor(conn, collection=collection, embedder=inner)
        sources = [SourceDocument(**fields)]
    try:
        report = ingestor.ingest(sources)  # never raises: every problem is a per-document error
        if "error" in expected:
            check_report_error(report, expected)
        else:
            check_stored(conn, embedder, report, expected, collection=collection, keep=keep,
                         input_text=input_text, input_metadata=input_metadata)
    finally:
        remove_documents_outside(conn, collection, keep)


def run_search(case: dict, conn, embedder, base: Baseline, tmp_path: Path) -> None:
    spec, expected = case["input"], case["expected"]
    query = query_of(spec)
    filters = make_filters(spec["filters_generator"]) if "filters_generator" in spec else spec.get("filters")
    try:
        if spec["via"] == "pipeline":
            result = Pipeline(conn, collection=base.name, embedder=embedder).search(
                query, filters=filters, **spec.get("options", {}))
            contexts = [(c.citation.document_id, c.document_key, c.citation.start_char, c.citation.end_char, c.text,
                         c.citation.first_ordinal, c.citation.last_ordinal) for c in result.contexts]
        else:
            embedding = make_embedding(spec["embedding"], embedder) if "embedding" in spec else None
            result = Retriever(conn, embedder=embedder, collection=base.name).search(
                query, mode=spec.get("mode", "hybrid"), filters=filters, query_embedding=embedding)
            contexts = [(c.document_id, c.document_key, c.start_char, c.end_char, c.text, c.first_ordinal,
                         c.last_ordinal) for c in result.contexts]
    except Exception as exc:
        if "error" not in expected:
            raise
        assert_clear_error(exc, expected["error"])
        return
    assert "error" not in expected, f"expected an error with {expected['error']!r}, got {len(contexts)} contexts"
    check_results(conn, embedder, base, spec, expected, contexts)


def vector_literal(recipe: dict, embedder: Embedder) -> str:
    values = np.asarray(make_embedding(recipe, embedder), dtype=np.float64).ravel()
    return "[" + ",".join("NaN" if math.isnan(v) else repr(float(v)) for v in values) + "]"


def run_sql(case: dict, conn, embedder, base: Baseline, tmp_path: Path) -> None:
    """The SQL functions as a psql user calls them: values as parameters, or inlined as literals."""
    spec, expected = case["input"], case["expected"]
    collection = spec.get("collection", base.name)
    function = spec["function"]
    try:
        if function == "dense_search":
            rows = conn.execute("SELECT * FROM windowrag.dense_search(%s, %s::vector)",
                                [collection, vector_literal(spec["embedding"], embedder)]).fetchall()
        elif function == "bm25_search":
            query = query_of(spec)
            text = sql.Literal(query) if spec.get("literal") else sql.Placeholder()
            statement = sql.SQL("SELECT * FROM windowrag.bm25_search({}, {})").format(sql.Literal(collection), text)
            rows = conn.execute(statement, [] if spec.get("literal") else [query]).fetchall()
        else:
            query = query_of(spec)
            embedding = embedder.embed_query(query)
            rows = conn.execute(
                "SELECT document_id, start_char, end_char, text FROM windowrag.search_windows(%s, %s, %s)",
                [collection, query, embedding]).fetchall()
            check_context_slices(conn, rows)
    except psycopg.Error as exc:
        if "error" not in expected:
            raise
        message = exc.diag.message_primary or str(exc)
        assert expected["error"] in message, message
        return
    assert "error" not in expected, f"expected an error with {expected['error']!r}, got {len(rows)} rows"
    assert rows, "no rows"


def run_parse_split(case: dict, conn, embedder, base: Baseline, tmp_path: Path, monkeypatch) -> None:
    """Parse and split only (embedding 50 MB would take hours): time it, check it."""
    spec, expected = case["input"], case["expected"]
    for name, value in spec.get("env", {}).items():
        monkeypatch.setenv(name, value)
    started = time.perf_counter()
    text = generate_text(spec["generator"])
    generated = time.perf_counter()
    parsed = parse_document(text, spec["format"])
    parsed_at = time.perf_counter()
    units = split_units(parsed)
    split_at = time.perf_counter()
    print(f"\n[{case['id']}] {len(text):,} chars: generate {generated - started:.1f}s, parse {parsed_at - generated:.1f}s, "
          f"split {split_at - parsed_at:.1f}s, {len(units):,} units in {len(parsed.sections):,} sections")
    assert len(units) >= expected["min_units"]
    assert all(text[u.start_char:u.end_char] == u.text for u in units[:: max(1, len(units) // 5000)])
    assert max(len(u.text) for u in units) <= 2000


RUNNERS = {"files": run_ingest, "document": run_ingest, "embedder": run_ingest,
           "retriever": run_search, "pipeline": run_search, "sql": run_sql}


# --- the tests -----------------------------------------------------------------------------

def test_manifest_is_complete() -> None:
    ids = [case["id"] for case in CASES]
    assert len(ids) >= 30 and len(ids) == len(set(ids))
    for case in CASES:
        assert case["kind"] in KINDS, case["id"]
        assert case["input"]["via"] in (*RUNNERS, "parse_split"), case["id"]
        assert ("error" in case["expected"]) != ("ok" in case["expected"]), case["id"]
        if "file" in case["input"]:
            assert (DATA / case["input"]["file"]).is_file(), case["input"]["file"]
    assert {case["kind"] for case in CASES} == KINDS
    checked_in = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert checked_in < 1_000_000, "big inputs must be generated from a recipe, not checked in"


@pytest.mark.parametrize("case", list(_params()))
def test_hostile_case(case, conn, embedder, baseline, tmp_path, monkeypatch) -> None:
    assert snapshot(conn, baseline.name) == baseline.snapshot, "baseline changed before this case"
    started = time.perf_counter()
    if case["input"]["via"] == "parse_split":
        run_parse_split(case, conn, embedder, baseline, tmp_path, monkeypatch)
    else:
        RUNNERS[case["input"]["via"]](case, conn, embedder, baseline, tmp_path)
    elapsed = time.perf_counter() - started
    if elapsed > 5:
        print(f"\n[{case['id']}] {elapsed:.1f}s")
    after = snapshot(conn, baseline.name)
    changed = [part for part in SNAPSHOT_PARTS if after[part] != baseline.snapshot[part]]
    assert not changed, f"baseline changed: {changed}"
    assert_usable(conn, embedder, baseline)
