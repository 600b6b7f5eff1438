"""Ingestion into the real database with the real model: offsets, idempotence, replace,
delete, heading paths, bad input."""
from __future__ import annotations

import json

import pytest

from windowrag_pg.ingest import Ingestor
from windowrag_pg.sources import SourceDocument, iter_sources
from windowrag_pg.store.collections import CollectionError, get_collection
from windowrag_pg.store.writer import delete_document

OFFSET_MISMATCHES = """
SELECT count(*) FROM windowrag.sentences s JOIN windowrag.documents d ON d.id = s.document_id
JOIN windowrag.collections c ON c.id = d.collection_id
WHERE c.name = %s AND substr(d.text, s.start_char + 1, s.end_char - s.start_char) <> s.text
"""
COUNTS = """
SELECT (SELECT count(*) FROM windowrag.documents d JOIN windowrag.collections c ON c.id = d.collection_id WHERE c.name = %(c)s),
       (SELECT count(*) FROM windowrag.sections x JOIN windowrag.documents d ON d.id = x.document_id
          JOIN windowrag.collections c ON c.id = d.collection_id WHERE c.name = %(c)s),
       (SELECT count(*) FROM windowrag.sentences s JOIN windowrag.collections c ON c.id = s.collection_id WHERE c.name = %(c)s)
"""


def counts(conn, name):
    return conn.execute(COUNTS, {"c": name}).fetchone()


def snapshot(conn, name):
    return conn.execute(
        "SELECT d.external_id, d.content_hash, s.ordinal, s.text, s.embedding::text FROM windowrag.sentences s"
        " JOIN windowrag.documents d ON d.id = s.document_id JOIN windowrag.collections c ON c.id = d.collection_id"
        " WHERE c.name = %s ORDER BY 1, 3", [name]).fetchall()


def test_contractnli_offsets_exact_and_reingest_adds_nothing(conn, contractnli_collection, embedder, eval_dir):
    before = counts(conn, contractnli_collection)
    assert before[0] == 61 and before[2] > 3000
    assert conn.execute(OFFSET_MISMATCHES, [contractnli_collection]).fetchone()[0] == 0
    nulls = conn.execute("SELECT count(*) FROM windowrag.sentences s JOIN windowrag.collections c ON c.id = s.collection_id"
                         " WHERE c.name = %s AND (s.embedding IS NULL OR s.tsv IS NULL)", [contractnli_collection]).fetchone()[0]
    assert nulls == 0
    report = Ingestor(conn, collection=contractnli_collection, embedder=embedder).ingest(
        iter_sources([eval_dir / "contractnli-dev" / "documents.jsonl"]))
    assert report.unchanged == 61 and report.added == report.replaced == 0
    assert counts(conn, contractnli_collection) == before


def test_a_newer_parser_rewrites_only_the_documents_it_cuts_otherwise(conn, collection_name, embedder, monkeypatch):
    # Stored under another units version (or unit setting), a document is parsed again on its next
    # ingest: kept (hash refreshed, nothing re-embedded) when its units come out the same,
    # rewritten when they do not. max_unit_chars stands in for a parser change.
    import windowrag_pg.ingest as ingest_module

    short = SourceDocument(external_id="short", format="text", text="Alpha is first. Beta is second.")
    long_text = "Gamma is a sentence that is much longer than forty characters in all. Delta."
    long = SourceDocument(external_id="long", format="text", text=long_text)
    assert Ingestor(conn, collection=collection_name, embedder=embedder).ingest([short, long]).added == 2
    before = {row[0]: row for row in snapshot(conn, collection_name)}

    monkeypatch.setattr(ingest_module, "UNITS_VERSION", ingest_module.UNITS_VERSION + 1)
    report = Ingestor(conn, collection=collection_name, embedder=embedder).ingest([short, long])
    assert (report.unchanged, report.replaced, report.metadata_updated, report.sentences) == (2, 0, 0, 0)
    again = Ingestor(conn, collection=collection_name, embedder=embedder).ingest([short, long])
    assert again.unchanged == 2  # the refreshed hash is the current one: not even parsed again
    hashes = {row[0]: row[1] for row in snapshot(conn, collection_name)}
    assert hashes["short"] != before["short"][1]

    report = Ingestor(conn, collection=collection_name, embedder=embedder, max_unit_chars=40).ingest([short, long])
    assert (report.unchanged, report.replaced) == (1, 1)  # "short" has no unit over 40 characters
    texts = [r[3] for r in snapshot(conn, collection_name) if r[0] == "long"]
    assert all(len(t) <= 40 for t in texts) and len(texts) > 2


def test_a_newer_parser_that_changes_only_section_levels_rewrites_the_document(conn, collection_name, embedder,
                                                                             monkeypatch):
    import windowrag_pg.ingest as ingest_module

    page = SourceDocument(external_id="page.md", format="markdown",
                          text="# Guide\n\nIntro text here.\n\n### Deep\n\nDeep text here.\n")
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest([page])
    levels = "SELECT x.level FROM windowrag.sections x JOIN windowrag.documents d ON d.id = x.document_id " \
             "JOIN windowrag.collections c ON c.id = d.collection_id WHERE c.name = %s ORDER BY x.ordinal"
    assert [r[0] for r in conn.execute(levels, [collection_name])] == [1, 3]

    def flatter(*args, **kwargs):  # a parser change that moves no unit: every heading level 1
        parsed = ingest_module.parse_document.__wrapped__(*args, **kwargs)
        for section in parsed.sections:
            section.level = min(section.level, 1)
        return parsed

    flatter.__wrapped__ = ingest_module.parse_document
    monkeypatch.setattr(ingest_module, "parse_document", flatter)
    monkeypatch.setattr(ingest_module, "UNITS_VERSION", ingest_module.UNITS_VERSION + 1)
    assert Ingestor(conn, collection=collection_name, embedder=embedder).ingest([page]).replaced == 1
    assert [r[0] for r in conn.execute(levels, [collection_name])] == [1, 1]


def test_changed_content_replaces_the_document_atomically(conn, collection_name, embedder):
    ingestor = Ingestor(conn, collection=collection_name, embedder=embedder)
    first = SourceDocument(external_id="doc", format="text", text="Alpha is first. Beta is second.")
    assert ingestor.ingest([first]).added == 1
    changed = SourceDocument(external_id="doc", format="text", text="Gamma replaces everything. Delta too. Epsilon.")
    report = ingestor.ingest([changed])
    assert report.replaced == 1
    texts = [r[3] for r in snapshot(conn, collection_name)]
    assert texts == ["Gamma replaces everything.", "Delta too.", "Epsilon."]
    assert counts(conn, collection_name) == (1, 1, 3)


def test_delete_removes_sections_and_sentences(conn, collection_name, embedder):
    ingestor = Ingestor(conn, collection=collection_name, embedder=embedder)
    ingestor.ingest([
        SourceDocument(external_id="keep", format="markdown", text="# Keep\n\nThis stays here."),
        SourceDocument(external_id="drop", format="markdown", text="# Drop\n\nThis goes away. Soon."),
    ])
    collection = get_collection(conn, collection_name)
    assert delete_document(conn, collection, "drop") is True
    assert delete_document(conn, collection, "drop") is False
    assert counts(conn, collection_name) == (1, 1, 2)


def test_handbook_heading_paths_are_kept(conn, collection_name, embedder, eval_dir):
    pages = [json.loads(line) for line in (eval_dir / "handbook" / "documents.jsonl").open()]
    page = next(p for p in pages if "\n### " in p["text"] and "\n## " in p["text"] and len(p["text"]) < 6000)
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest([
        SourceDocument(external_id=page["id"], format="markdown", text=page["text"], title=page["title"])])
    rows = conn.execute(
        "SELECT x.heading_path, x.level FROM windowrag.sections x JOIN windowrag.documents d ON d.id = x.document_id"
        " JOIN windowrag.collections c ON c.id = d.collection_id WHERE c.name = %s ORDER BY x.ordinal",
        [collection_name]).fetchall()
    level3 = [path for path, level in rows if level == 3]
    assert level3, rows
    # a level-3 section sits under the level-2 heading that precedes it
    assert all(len(path) >= 2 for path in level3)
    assert conn.execute(OFFSET_MISMATCHES, [collection_name]).fetchone()[0] == 0


def test_heading_path_benefits_dental(conn, collection_name, embedder):
    text = "# Handbook\n\n## Benefits\n\nWe offer benefits.\n\n### Dental\n\nThe dental plan is free. It covers you.\n"
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id="h", format="markdown", text=text)])
    path = conn.execute(
        "SELECT x.heading_path FROM windowrag.sentences s JOIN windowrag.sections x ON x.id = s.section_id"
        " JOIN windowrag.collections c ON c.id = s.collection_id WHERE c.name = %s AND s.text = 'The dental plan is free.'",
        [collection_name]).fetchone()[0]
    assert path[-2:] == ["Benefits", "Dental"]


def test_collection_refuses_another_model(conn, collection_name, embedder):
    Ingestor(conn, collection=collection_name, embedder=embedder)
    conn.execute("UPDATE windowrag.collections SET embedding_model = 'other-model' WHERE name = %s", [collection_name])
    with pytest.raises(CollectionError, match="other-model"):
        Ingestor(conn, collection=collection_name, embedder=embedder)


BAD_FILES = {
    "empty.txt": b"",
    "blank.md": b"   \n\t\n  ",
    "junk.txt": bytes(range(256)) * 20,
    "latin1.txt": "caf\xe9 cr\xe8me".encode("latin-1"),
    "nul.md": b"# Title\n\nText with a \x00 NUL byte.",
    "notes.pptx": b"PK\x03\x04 a format not read",
    "broken.docx": b"PK\x03\x04 not really a docx",
    "broken.pdf": b"%PDF-1.4\n this is not a pdf at all",
}


def test_a_pdf_stored_without_a_page_says_so(conn, collection_name, embedder, tmp_path, capsys, db_url,
                                             monkeypatch):
    from windowrag_pg.cli import main

    from .test_parse_split import pdf_with_a_broken_page

    path, copy = tmp_path / "manual.pdf", tmp_path / "copy.pdf"
    path.write_bytes(pdf_with_a_broken_page())
    copy.write_bytes(pdf_with_a_broken_page())
    report = Ingestor(conn, collection=collection_name, embedder=embedder).ingest(iter_sources([path]))
    assert report.added == 1 and not report.errors
    assert [(w.name, w.message[:33]) for w in report.warnings] == [
        (str(path), "page 2 could not be read (Error -"), (str(path), "1 page without text (scanned imag")]
    assert report.as_dict()["warnings"][0]["name"] == str(path)
    monkeypatch.setenv("WINDOWRAG_DATABASE_URL", db_url)
    assert main(["ingest", str(copy), "--collection", collection_name]) == 0  # stored: a warning, not an error
    assert f"warning: {copy}: page 2 could not be read" in capsys.readouterr().err


def test_a_word_document_is_ingested_and_cited_by_section(conn, collection_name, embedder, tmp_path):
    from windowrag_pg.pipeline import Pipeline

    from .test_parse_split import make_docx

    (tmp_path / "nda.docx").write_bytes(make_docx())
    report = Ingestor(conn, collection=collection_name, embedder=embedder).ingest(iter_sources([tmp_path]))
    assert report.added == 1 and not report.errors and report.sentences == 12
    result = Pipeline(conn, collection=collection_name, embedder=embedder).search(
        "what information is excluded?", token_budget=60, min_relevance=None)
    best = result.contexts[0]
    assert best.citation.title == "Mutual NDA"
    assert best.citation.section_path == ("1. Definitions", "1.1 Exclusions") and "already public" in best.text


def test_bad_inputs_get_clear_errors_and_touch_nothing(conn, collection_name, embedder, tmp_path):
    ingestor = Ingestor(conn, collection=collection_name, embedder=embedder)
    (tmp_path / "good.md").write_text("# Good\n\nA fine document. It has two sentences.\n")
    ingestor.ingest(iter_sources([tmp_path]))
    before = snapshot(conn, collection_name)
    for name, data in BAD_FILES.items():
        (tmp_path / name).write_bytes(data)
    # in a folder, a file of another format is passed over; named on its own, it is refused
    report = ingestor.ingest(iter_sources([tmp_path, tmp_path / "notes.pptx"]))
    by_name = {e.name.rsplit("/", 1)[-1]: e.message for e in report.errors}
    assert set(by_name) == set(BAD_FILES), by_name
    assert "empty" in by_name["empty.txt"]
    assert "whitespace" in by_name["blank.md"] or "empty" in by_name["blank.md"]
    assert "UTF-8" in by_name["latin1.txt"]
    assert "NUL" in by_name["nul.md"]
    assert "format" in by_name["notes.pptx"]
    assert "unreadable DOCX" in by_name["broken.docx"]
    assert "PDF" in by_name["broken.pdf"] or "pdf" in by_name["broken.pdf"]
    assert report.unchanged == 1
    assert snapshot(conn, collection_name) == before


@pytest.mark.slow
def test_a_million_character_line_goes_in_as_bounded_pieces(conn, collection_name, embedder, tmp_path):
    # ~500 units of 2,000 characters, each embedded at the 512-token limit: about a minute here.
    (tmp_path / "long.txt").write_text("word " * 200_000)
    report = Ingestor(conn, collection=collection_name, embedder=embedder).ingest(iter_sources([tmp_path]))
    assert report.added == 1, report.errors
    longest, units = conn.execute(
        "SELECT max(length(s.text)), count(*) FROM windowrag.sentences s JOIN windowrag.collections c"
        " ON c.id = s.collection_id WHERE c.name = %s", [collection_name]).fetchone()
    assert longest <= 2000 and units >= 500


def test_jsonl_bad_lines_are_reported_with_line_numbers(conn, collection_name, embedder, tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join([
        json.dumps({"id": "ok", "title": "Ok", "text": "Fine text. More text.", "format": "text", "metadata": {"a": 1}}),
        "{not json",
        json.dumps({"id": "nofmt", "text": "x", "format": "docx"}),
        json.dumps({"title": "no id", "text": "x"}),
        json.dumps({"id": "blank", "text": "   \u200b  ", "format": "markdown"}),  # fails in the parser
    ]))
    report = Ingestor(conn, collection=collection_name, embedder=embedder).ingest(iter_sources([path]))
    assert report.added == 1
    assert sorted(e.name.rsplit(":", 1)[1] for e in report.errors) == ["2", "3", "4", "5"]
    assert all(e.name.startswith(str(path)) for e in report.errors)


def test_a_database_error_fails_its_document_only_and_the_batch_goes_on(conn, db_url, collection_name, embedder):
    from windowrag_pg.db.connection import connect

    def doc(name: str, text: str) -> SourceDocument:
        return SourceDocument(external_id=name, format="text", text=text)

    ingestor = Ingestor(conn, collection=collection_name, embedder=embedder)
    assert ingestor.ingest([doc("locked", "The first version. It has two sentences.")]).added == 1
    before = snapshot(conn, collection_name)
    conn.execute("SET lock_timeout = '300ms'")
    # another session holds the row of "locked": replacing it times out, the others go in
    with connect(db_url) as other:
        other.execute("SELECT 1 FROM windowrag.documents d JOIN windowrag.collections c ON c.id = d.collection_id"
                      " WHERE c.name = %s AND d.external_id = 'locked' FOR UPDATE OF d", [collection_name])
        report = ingestor.ingest([doc("locked", "A second version. Still two sentences."),
                                  doc("free-1", "Nothing holds this one."), doc("free-2", "Nor this one.")])
        other.rollback()
    assert report.added == 2 and [e.name for e in report.errors] == ["locked"]
    assert "lock timeout" in report.errors[0].message
    assert [row for row in snapshot(conn, collection_name) if row[0] == "locked"] == before
    # a unique violation (a row inserted with an id the sequence hands out next) fails one document
    conn.execute("INSERT INTO windowrag.documents (id, collection_id, external_id, format, content_hash, text,"
                 " sentence_count) SELECT CASE WHEN s.is_called THEN s.last_value + 1 ELSE s.last_value END,"
                 " c.id, 'squatter', 'text', 'h', 'x', 0"
                 " FROM windowrag.documents_id_seq s, windowrag.collections c WHERE c.name = %s", [collection_name])
    report = ingestor.ingest([doc("collides", "This one meets the squatter."), doc("after", "This one does not.")])
    assert report.added == 1 and [e.name for e in report.errors] == ["collides"]
    assert "documents_pkey" in report.errors[0].message or "duplicate key" in report.errors[0].message
    assert ingestor.ingest([doc("collides", "This one meets the squatter.")]).added == 1  # the sequence moved on
    assert counts(conn, collection_name)[0] == 6


def test_two_first_ingests_of_a_new_collection_at_once_both_succeed(db_url, conn, collection_name, embedder):
    """Both sessions saw no index and created it: the second failed with a raw UniqueViolation
    on pg_class (2 of 5 tries of two processes). Made certain here: one session creates the index
    and holds its transaction open while the other asks for it."""
    import threading
    import time

    from windowrag_pg.db.connection import connect
    from windowrag_pg.store import collections as store

    collection = store.ensure_collection(conn, collection_name, embedding_model=embedder.model_id,
                                         dimension=embedder.dimension, index=False)
    first = connect(db_url)  # not autocommit: its CREATE INDEX stays uncommitted
    second = connect(db_url, autocommit=True)
    try:
        store._create_index(first, collection, None, None, concurrently=False)
        failure: list[BaseException] = []

        def ensure() -> None:
            try:
                store.ensure_collection_index(second, collection)
            except BaseException as exc:  # noqa: BLE001 - reported below
                failure.append(exc)

        thread = threading.Thread(target=ensure)
        thread.start()
        time.sleep(1.0)  # the second session's CREATE INDEX now waits on the first's catalog row
        first.commit()
        thread.join(30)
        assert not thread.is_alive() and failure == []
        assert store.collection_index_state(second, collection) == "valid"
    finally:
        first.close()
        second.close()
    report = Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id="a", format="text", text="One sentence here. Another one there.")])
    assert report.added == 1 and not report.errors


def test_a_collection_deleted_during_an_ingest_is_reported_not_raised(db_url, conn, collection_name, embedder):
    """The upkeep after an incremental ingest raised a TypeError (its index statistics read None)."""
    import windowrag_pg as wr
    from windowrag_pg.db.connection import connect

    other = connect(db_url, autocommit=True)
    documents = [SourceDocument(external_id=f"d{i}", format="text", text=f"Sentence {i}. Another one.") for i in range(3)]

    def delete_meanwhile(document_id, status, units):
        if document_id == "d0":
            wr.delete_collection(other, collection_name)

    try:
        report = Ingestor(conn, collection=collection_name, embedder=embedder, bulk=False).ingest(
            documents, on_document=delete_meanwhile)
    finally:
        other.close()
    assert report.errors and all("was deleted or re-embedded" in e.message for e in report.errors), \
        [(e.name, e.message) for e in report.errors]


def test_a_new_collection_embeds_contextual_headers_and_an_old_one_keeps_its_setting(conn, collection_name, embedder):
    text = "# Handbook\n\n## Dental\n\nThe dental plan is free. It covers you and your family.\n"
    source = SourceDocument(external_id="h", format="markdown", text=text)
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest([source])
    assert get_collection(conn, collection_name).contextual_headers is True
    stored = conn.execute(
        "SELECT s.embedding::text FROM windowrag.sentences s JOIN windowrag.collections c ON c.id = s.collection_id"
        " WHERE c.name = %s AND s.text = 'It covers you and your family.'", [collection_name]).fetchone()[0]
    vector = [float(x) for x in stored.strip("[]").split(",")]
    with_header = embedder.embed_documents(["Handbook › Dental: It covers you and your family."])[0]
    alone = embedder.embed_documents(["It covers you and your family."])[0]
    # (halfvec storage and batching move a cosine by a few thousandths)
    assert sum(a * b for a, b in zip(vector, with_header)) > 0.99
    assert sum(a * b for a, b in zip(vector, alone)) < 0.95

    # a collection made without headers (before they were the default) keeps embedding sentences alone
    bare = collection_name + "_bare"
    Ingestor(conn, collection=bare, embedder=embedder, contextual_headers=False).ingest([source])
    more = SourceDocument(external_id="h2", format="markdown", text=text.replace("family", "children"))
    assert Ingestor(conn, collection=bare, embedder=embedder).ingest([more]).added == 1
    assert get_collection(conn, bare).contextual_headers is False
    with pytest.raises(CollectionError, match="contextual_headers=False"):
        Ingestor(conn, collection=bare, embedder=embedder, contextual_headers=True)


def test_cli_no_contextual_headers_makes_a_collection_that_embeds_sentences_alone(db_url, conn, collection_name, tmp_path):
    from windowrag_pg.cli import main

    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nThe first note. The second note.\n")
    assert main(["--database-url", db_url, "ingest", str(path), "--collection", collection_name,
                 "--no-contextual-headers"]) == 0
    assert get_collection(conn, collection_name).contextual_headers is False
    # later ingests follow the collection's setting without the flag; --contextual-headers is refused
    (tmp_path / "more.md").write_text("# More\n\nA third note.\n")
    assert main(["--database-url", db_url, "ingest", str(tmp_path / "more.md"), "--collection", collection_name]) == 0
    assert main(["--database-url", db_url, "ingest", str(tmp_path / "more.md"), "--collection", collection_name,
                 "--contextual-headers"]) == 1
