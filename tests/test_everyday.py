"""Everyday operations (issue 12, item 9): list documents, delete a collection, a filter that
matches nothing says so, a metadata-only change re-embeds nothing."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import windowrag_pg as wr
from windowrag_pg.cli import main
from windowrag_pg.embed.onnx_bge import OnnxBgeEmbedder
from windowrag_pg.ingest import Ingestor
from windowrag_pg.pipeline import Pipeline, PipelineOptions
from windowrag_pg.sources import SourceDocument
from windowrag_pg.store.collections import CollectionError


class CountingEmbedder(OnnxBgeEmbedder):
    """The real ONNX embedder, counting the texts it embeds for documents."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded = 0

    def _embed(self, texts, *, batch_size, progress):
        self.embedded += len(texts)
        return super()._embed(texts, batch_size=batch_size, progress=progress)


DOCS = [
    SourceDocument(external_id="keys", format="markdown", source="/srv/security.md", metadata={"team": "security"},
                   text="# Keys\n\nSigning keys are rotated every month. Old keys are kept for a week.\n\n## Owners\n\n"
                        "The security team owns the rotation."),
    SourceDocument(external_id="lunch", format="text", source="/srv/office.txt", metadata={"team": "office"},
                   text="Lunch is served at noon. The office closes at six."),
]


def test_list_documents_with_filters_from_the_api_and_the_cli(db_url, conn, collection_name, embedder, capsys):
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(DOCS)
    rows = wr.list_documents(conn, collection=collection_name)
    assert [(r["id"], r["title"], r["source"], r["sentences"], r["sections"]) for r in rows] == [
        ("keys", "Keys", "/srv/security.md", 5, 2), ("lunch", None, "/srv/office.txt", 2, 1)]
    stored = conn.execute("SELECT count(*) FROM windowrag.sentences s JOIN windowrag.collections c"
                          " ON c.id = s.collection_id WHERE c.name = %s", [collection_name]).fetchone()[0]
    assert stored == sum(r["sentences"] for r in rows)
    assert [r["id"] for r in wr.list_documents(conn, collection=collection_name, filters={"metadata.team": "office"})] \
        == ["lunch"]
    assert main(["--database-url", db_url, "documents", "--collection", collection_name, "--json",
                 "--filter", "source=/srv/security.md"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["keys"]


def test_a_filter_that_matches_nothing_says_so(db_url, conn, collection_name, embedder, capsys):
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(DOCS)
    pipeline = Pipeline(conn, collection=collection_name, embedder=embedder)
    found = pipeline.search("rotate keys", filters={"metadata.team": "security"})
    assert found.contexts and found.trace["notes"] == []
    empty = pipeline.search("rotate keys", filters={"source": "security", "metadata.team": "security"})
    assert empty.contexts == []
    assert empty.trace["notes"] == ["filter source='security' matches no document of collection "
                                    f"{collection_name!r} (source is the file path the document was read from; "
                                    "the metadata key is metadata.source)"]
    for command in (["query", "rotate keys"], ["documents"]):
        code = main(["--database-url", db_url, *command, "--collection", collection_name, "--filter", "metadata.source=x"])
        err = capsys.readouterr().err
        assert code == 0 and "filter metadata.source='x' matches no document" in err
        assert "metadata.source is a metadata key; the file path the document was read from is source" in err


def test_delete_collection_removes_everything_of_it_and_nothing_else(db_url, conn, collection_name, embedder, capsys):
    other = collection_name + "_kept"
    Ingestor(conn, collection=other, embedder=embedder).ingest(DOCS[:1])
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(DOCS)
    cid = conn.execute("SELECT id FROM windowrag.collections WHERE name = %s", [collection_name]).fetchone()[0]

    def left() -> list[int]:
        return [conn.execute(f"SELECT count(*) FROM windowrag.{table} WHERE collection_id = %s", [cid]).fetchone()[0]
                for table in ("documents", "sentences", "bm25_terms", "bm25_postings", "bm25_stats")] + [
            conn.execute("SELECT count(*) FROM pg_class WHERE relname = %s", [f"sentences_embedding_hnsw_c{cid}"]
                         ).fetchone()[0]]

    assert all(left())
    before_other = wr.list_documents(conn, collection=other)
    assert main(["--database-url", db_url, "delete-collection", collection_name]) == 0
    assert "(2 documents)" in capsys.readouterr().out
    assert left() == [0] * 6
    with pytest.raises(CollectionError, match="does not exist"):
        wr.list_documents(conn, collection=collection_name)
    assert wr.list_documents(conn, collection=other) == before_other
    assert wr.delete_collection(conn, other) == 1
    assert main(["--database-url", db_url, "delete-collection", other]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_a_document_given_without_a_source_keeps_the_stored_one(conn, embedder, collection_name):
    """The README's LlamaIndex snippet re-ingests a file's text under the file's id with metadata
    file_name only (no source): the stored source (the file's path) was erased, so source= found
    the document no more. Its metadata is replaced, its source kept; a source given replaces it."""
    ingestor = Ingestor(conn, collection=collection_name, embedder=embedder)
    ingestor.ingest(DOCS)
    by_source = {"source": "/srv/security.md"}

    def stored():
        return {r["id"]: (r["source"], r["metadata"]) for r in wr.list_documents(conn, collection=collection_name)}

    unnamed = dataclasses.replace(DOCS[0], source=None, metadata={"file_name": "security.md"})
    assert ingestor.ingest([unnamed]).metadata_updated == 1  # the same text: metadata only
    assert stored()["keys"] == ("/srv/security.md", {"file_name": "security.md"})
    assert ingestor.ingest([unnamed]).unchanged == 1
    rewritten = dataclasses.replace(unnamed, text=DOCS[0].text + " Keys are never emailed.")
    assert ingestor.ingest([rewritten]).replaced == 1  # a new text: written again
    assert stored()["keys"][0] == "/srv/security.md"
    assert [r["id"] for r in wr.list_documents(conn, collection=collection_name, filters=by_source)] == ["keys"]
    moved = dataclasses.replace(rewritten, source="/srv/moved/security.md", metadata={"file_name": "moved"})
    assert ingestor.ingest([moved]).metadata_updated == 1
    assert stored()["keys"][0] == "/srv/moved/security.md"
    assert stored()["lunch"][0] == "/srv/office.txt"  # the other document as it was


def test_a_metadata_only_change_updates_metadata_without_re_embedding(conn, collection_name):
    embedder = CountingEmbedder()
    ingestor = Ingestor(conn, collection=collection_name, embedder=embedder)
    assert ingestor.ingest(DOCS).added == 2
    embedded = embedder.embedded
    assert embedded == 7
    ids_before = conn.execute("SELECT s.id FROM windowrag.sentences s JOIN windowrag.collections c"
                              " ON c.id = s.collection_id WHERE c.name = %s ORDER BY s.id", [collection_name]).fetchall()
    changed = SourceDocument(external_id="keys", format="markdown", source="/srv/moved/security.md",
                             metadata={"team": "platform", "reviewed": 2026}, text=DOCS[0].text)
    report = ingestor.ingest([changed, DOCS[1]])
    assert not report.errors, report.errors
    assert (report.metadata_updated, report.unchanged, report.added, report.replaced) == (1, 1, 0, 0)
    assert embedder.embedded == embedded  # nothing embedded
    rows = {r["id"]: r for r in wr.list_documents(conn, collection=collection_name)}
    assert rows["keys"]["metadata"] == {"team": "platform", "reviewed": 2026}
    assert rows["keys"]["source"] == "/srv/moved/security.md"
    assert ids_before == conn.execute("SELECT s.id FROM windowrag.sentences s JOIN windowrag.collections c"
                                      " ON c.id = s.collection_id WHERE c.name = %s ORDER BY s.id",
                                      [collection_name]).fetchall()
    assert ingestor.ingest([changed]).unchanged == 1  # and it is now stored as it is
    # a change of the text (or title) is embedded again
    retitled = SourceDocument(external_id="keys", format="markdown", title="Key rotation",
                              metadata=changed.metadata, text=DOCS[0].text)
    assert ingestor.ingest([retitled]).replaced == 1
    assert embedder.embedded == embedded + 5


def test_window_options_the_default_selection_does_not_use_are_reported(db_url, conn, collection_name, embedder, capsys):
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(DOCS)
    pipeline = Pipeline(conn, collection=collection_name, embedder=embedder)
    assert pipeline.search("rotate keys").trace["notes"] == []
    widened = pipeline.search("rotate keys", window=5)
    assert widened.contexts and len(widened.trace["notes"]) == 1
    assert "window=5 applies to selection 'windows' or 'value_windows'" in widened.trace["notes"][0]
    assert pipeline.search("rotate keys", window=5, selection="windows").trace["notes"] == []
    both = pipeline.search("rotate keys", window=5, max_sentences=8)
    assert [note.split(" applies")[0] for note in both.trace["notes"]] == ["window=5", "max_sentences=8"]
    assert pipeline.search("rotate keys", max_sentences=8, selection="windows").trace["notes"] == []
    assert main(["--database-url", db_url, "query", "rotate keys", "--collection", collection_name, "--window", "1"]) == 0
    assert "windowrag: note: window=1 applies to selection" in capsys.readouterr().err


def test_naming_a_reranker_turns_reranking_on(db_url, conn, collection_name, embedder, capsys):
    from windowrag_pg.rerank import DEFAULT_RERANKER_MODEL_ID

    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(DOCS)
    base = ["--database-url", db_url, "query", "rotate keys", "--collection", collection_name, "--json"]
    traces = {}
    for extra in ([], ["--reranker", DEFAULT_RERANKER_MODEL_ID], ["--reranker", DEFAULT_RERANKER_MODEL_ID, "--no-rerank"]):
        assert main([*base, *extra]) == 0
        traces[len(extra)] = json.loads(capsys.readouterr().out)["trace"]
    assert traces[0]["rerank"] is None and traces[3]["rerank"] is None
    assert traces[2]["rerank"] is not None and traces[2]["options"]["rerank"] is True


def test_queries_use_the_collections_own_model_or_say_which_to_pass(db_url, conn, collection_name, capsys):
    """Without an embedder, a collection's queries are embedded by the model it was embedded with
    (its model_id read back); an ONNX folder's model cannot be loaded by name, and the error says
    which embedder to pass."""
    renamed = OnnxBgeEmbedder(model_id="onnx:my-bge-folder")  # as a model_dir of one's own is named
    Ingestor(conn, collection=collection_name, embedder=renamed).ingest(DOCS)
    with pytest.raises(wr.QueryError, match="'onnx:my-bge-folder', an ONNX model folder that cannot be found by its "
                                            r"name: pass that embedder \(Pipeline\(\.\.\., embedder=\.\.\.\)\)"):
        Pipeline(conn, collection=collection_name).search("Who owns the rotation?", token_budget=100)
    assert main(["--database-url", db_url, "query", "Who owns the rotation?", "--collection", collection_name]) == 1
    assert "cannot be found by its name" in capsys.readouterr().err
    found = Pipeline(conn, collection=collection_name, embedder=renamed).search("Who owns the rotation?", token_budget=100)
    assert "security team owns the rotation" in found.contexts[0].text
    more = [SourceDocument(external_id="more", format="text", text="Badges are renewed every year.")]
    with pytest.raises(CollectionError, match="'onnx:my-bge-folder', an ONNX model folder .* pass that embedder"):
        Ingestor(conn, collection=collection_name).ingest(more)
    # the default model: nothing to name, in Python and on the command line
    default = f"{collection_name}_default"
    Ingestor(conn, collection=default, embedder=OnnxBgeEmbedder()).ingest(DOCS)
    assert "security team owns the rotation" in \
        Pipeline(conn, collection=default).search("Who owns the rotation?", token_budget=100).contexts[0].text
    assert main(["--database-url", db_url, "query", "Who owns the rotation?", "--collection", default, "--json"]) == 0
    assert "security team owns the rotation" in json.loads(capsys.readouterr().out)["contexts"][0]["text"]
    assert Ingestor(conn, collection=default).ingest(more).documents == 1
    assert "Badges are renewed" in Pipeline(conn, collection=default).search(
        "When are badges renewed?", token_budget=100, min_relevance=None).contexts[0].text


def test_an_ingest_of_nothing_readable_makes_no_collection(db_url, conn, collection_name, tmp_path, capsys):
    missing = tmp_path / "no-such-file.md"
    assert main(["--database-url", db_url, "ingest", str(missing), "--collection", collection_name]) == 1
    assert f"{missing}: no such file or folder" in capsys.readouterr().err
    with pytest.raises(CollectionError, match="does not exist"):
        wr.list_documents(conn, collection=collection_name)  # a typo left no empty collection behind
    (tmp_path / "note.md").write_text("# Note\n\nThe backup runs at night.")
    assert main(["--database-url", db_url, "ingest", str(missing), str(tmp_path / "note.md"),
                 "--collection", collection_name]) == 1  # the readable one is stored, the failure reported
    assert [d["id"] for d in wr.list_documents(conn, collection=collection_name)] == [str(tmp_path / "note.md")]


def test_a_project_folder_is_ingested_without_its_hidden_and_other_files(db_url, collection_name, tmp_path, capsys):
    """A folder with .git and images failed (exit 1, "unknown suffix" for each) and stored the
    text files under .git; an empty folder reported "0 documents" and exit 0."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Boats\n\nThe supply boat arrives on Tuesdays.\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / ".git" / "notes.txt").write_text("Not a document of the project.\n")
    (tmp_path / ".hidden.md").write_text("# Hidden\n\nNot this either.\n")
    (tmp_path / "pic.png").write_bytes(b"\x89PNG\r\n")
    assert main(["--database-url", db_url, "ingest", str(tmp_path), "--collection", collection_name]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("1 document (1 added") and err == ""
    assert main(["--database-url", db_url, "documents", "--collection", collection_name, "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [str((tmp_path / "docs" / "page.md").resolve())]
    empty = tmp_path / "empty"
    (empty / "img").mkdir(parents=True)
    (empty / "img" / "a.png").write_bytes(b"\x89PNG\r\n")
    assert main(["--database-url", db_url, "ingest", str(empty), "--collection", collection_name]) == 1
    assert f"error: {empty}: no file to read in this folder (1 other file passed over)" in capsys.readouterr().err


def test_a_deleted_file_is_deleted_by_its_relative_path(db_url, collection_name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gone.txt").write_text("Gone soon. It was here once.\n")
    assert main(["--database-url", db_url, "ingest", "gone.txt", "--collection", collection_name]) == 0
    (tmp_path / "gone.txt").unlink()  # the usual reason to delete it
    assert main(["--database-url", db_url, "delete", "gone.txt", "--collection", collection_name]) == 0
    assert capsys.readouterr().out.strip().endswith(f"deleted {tmp_path.resolve() / 'gone.txt'}")


def test_rse_with_the_default_selection_says_which_selection_ran(conn, collection_name, embedder):
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(DOCS)
    result = Pipeline(conn, collection=collection_name, embedder=embedder).search("rotate keys", rse="balanced")
    assert result.trace["options"]["selection"] == "windows"
    assert any(note.startswith("rse='balanced' runs over fixed windows") for note in result.trace["notes"])
    assert not any("contexts for k=" in note for note in result.trace["notes"])


def test_a_bad_statement_timeout_setting_is_named(db_url, monkeypatch, capsys):
    monkeypatch.setenv("WINDOWRAG_STATEMENT_TIMEOUT_MS", "abc")
    assert main(["--database-url", db_url, "stats"]) == 1
    assert "WINDOWRAG_STATEMENT_TIMEOUT_MS='abc' is not a whole number of milliseconds" in capsys.readouterr().err


def test_piped_output_is_not_cut_to_the_terminal_width(db_url, conn, collection_name, embedder, capsys):
    long_id = "a-document-id-long-enough-that-eighty-columns-would-cut-it-" + "x" * 60
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest([
        SourceDocument(external_id=long_id, format="text", text="Signing keys are rotated every month.")])
    assert main(["--database-url", db_url, "documents", "--collection", collection_name]) == 0
    assert long_id in capsys.readouterr().out  # capsys is not a terminal, as a pipe
    assert main(["--database-url", db_url, "query", "rotate keys", "--collection", collection_name,
                 "--min-relevance", "none"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"[1] [{long_id}], chars 0–37 — score ") and "\nSigning keys are rotated every month.\n" in out


@pytest.mark.parametrize(("options", "message"), [
    ({"k": None}, "k must be a whole number from 1 to 1000, not None"),
    ({"candidates": None}, "candidates must be a whole number from 1 to 1000, not None"),
    ({"rerank": "yes"}, "rerank must be True or False, not 'yes'"),
    ({"mode": "hibrid"}, "mode must be one of hybrid, dense, bm25, not 'hibrid'"),
    ({"order": "bogus"}, "order must be one of score, document, not 'bogus'"),
    ({"rse": "bogus"}, "rse: unknown RSE preset 'bogus'"),
    ({"proximity_scale": None}, "proximity_scale must be a positive number, not None"),
])
def test_python_options_are_checked_by_name_before_any_query(options, message):
    """None or a bad value got past the checks: a TypeError deep inside, a SQL error, or (before
    migration 0027) a silent 'no sentence matched' for candidates=None."""
    from windowrag_pg.pipeline import PipelineOptions
    from windowrag_pg.retrieve.retriever import QueryError

    with pytest.raises(QueryError) as raised:
        PipelineOptions(**options)
    assert str(raised.value).startswith(message)


def test_an_empty_path_and_paths_given_to_ingest_are_named(conn, collection_name, embedder):
    assert [(e.name, e.message) for e in wr.iter_sources([""])] == [("''", "an empty path names no file or folder")]
    with pytest.raises(TypeError, match=r"Ingestor.ingest takes SourceDocuments, not str .*iter_sources\(paths\)"):
        Ingestor(conn, collection=collection_name, embedder=embedder).ingest(["windowrag_pg/samples/security.md"])


def test_an_unknown_search_option_is_named_with_the_valid_ones(db_url, conn, samples_collection, embedder):
    """wr.search(q, top_k=5) and Pipeline.search(q, options=PipelineOptions(...)) raised a bare
    TypeError from PipelineOptions.__init__; the framework retrievers already named the options."""
    from windowrag_pg.retrieve.retriever import QueryError

    pipeline = Pipeline(conn, collection=samples_collection, embedder=embedder)
    for search in (lambda **o: wr.search("learning budget", collection=samples_collection, url=db_url, **o),
                   lambda **o: pipeline.search("learning budget", **o)):
        with pytest.raises(QueryError, match=r"^unknown search option\(s\) top_k; the options of "
                                             r"windowrag_pg.search are k, token_budget, .*window, mode, rerank"):
            search(top_k=5)
        with pytest.raises(QueryError, match=r"takes its options as keywords \(k=5, .*not options=; "
                                             r"a PipelineOptions goes to Pipeline.run\(query, options\)"):
            search(options=PipelineOptions(k=2))
    assert pipeline.run("learning budget", PipelineOptions(k=2)).contexts  # as the message says


@pytest.mark.parametrize("one_path", ["/", ".", "a.md", b"/", Path("/")])
def test_one_path_given_to_iter_sources_is_refused_when_called(one_path):
    """iter_sources("a.md") iterated the string: "." read the working folder, "/" walked the whole
    disk (a PermissionError on /proc); it must be refused before anything is read."""
    with pytest.raises(TypeError, match=r"iter_sources takes a list of paths, not one path .*iter_sources\(\["):
        wr.iter_sources(one_path)


def test_a_new_collection_name_needs_a_visible_character(conn, embedder):
    for name in ("   ", "tab\there"):
        with pytest.raises(CollectionError, match="must have a visible character and no control characters"):
            Ingestor(conn, collection=name, embedder=embedder)


def test_collection_helpers_take_a_pool_or_a_url_and_a_model_name(db_url, conn, collection_name, embedder):
    """list_documents, delete_collection and reembed_collection took only a Connection (an
    AttributeError for a pool, which goes wherever a connection does), reembed only an Embedder."""
    from psycopg_pool import ConnectionPool

    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(DOCS)
    with ConnectionPool(db_url, min_size=1, max_size=2) as pool:
        assert [r["id"] for r in wr.list_documents(pool, collection=collection_name)] == ["keys", "lunch"]
        assert wr.reembed_collection(pool, collection_name, "bge-small-en") == 7
    assert [r["id"] for r in wr.list_documents(db_url, collection=collection_name)] == ["keys", "lunch"]
    assert wr.delete_collection(db_url, collection_name) == 2


def test_format_context_takes_a_retrievers_contexts(conn, collection_name, embedder):
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(DOCS)
    contexts = wr.Retriever(conn, collection=collection_name, embedder=embedder).search("rotate keys", k=1).contexts
    # the page's H1 is its title: named once, not again as the first step of the section path
    assert wr.format_context(contexts).startswith("[1] Keys [keys], chars 2–75\nKeys\n\nSigning keys are rotated")


def test_json_lines_sources_and_source_filters_read_paths_as_files_do(db_url, collection_name, tmp_path, monkeypatch,
                                                                      capsys):
    """A JSON-lines record's source was the path as typed (`j.jsonl`), so `--filter source=` had to
    be typed the same way, unlike a file's (absolute); a repeated id silently replaced its record."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "j.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"id": "bees", "text": "Bees make honey in summer."},
        {"id": "ants", "text": "Ants build hills of sand."},
        {"id": "bees", "text": "A second record with the first one's id."}]) + "\n")
    assert main(["--database-url", db_url, "ingest", "j.jsonl", "--collection", collection_name]) == 1
    err = capsys.readouterr().err
    assert "error: j.jsonl:3: id 'bees' is already the id of line 1: this record is not ingested" in err
    assert main(["--database-url", db_url, "documents", "--collection", collection_name, "--json",
                 "--filter", "source=j.jsonl"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["id"], r["source"]) for r in rows] == [("ants", str(tmp_path.resolve() / "j.jsonl")),
                                                      ("bees", str(tmp_path.resolve() / "j.jsonl"))]
    assert main(["--database-url", db_url, "query", "honey", "--collection", collection_name, "--json",
                 "--filter", f"source={tmp_path.resolve() / 'j.jsonl'}", "--min-relevance", "none"]) == 0
    assert json.loads(capsys.readouterr().out)["contexts"][0]["text"] == "Bees make honey in summer."


def test_a_sentence_floor_sends_fewer_tokens_from_the_cli(db_url, conn, collection_name, embedder, capsys):
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(DOCS)
    tokens = {}
    for floor in ("0", "2"):
        assert main(["--database-url", db_url, "query", "How often are signing keys rotated?", "--collection",
                     collection_name, "--json", "--min-relevance", "none", "--sentence-floor", floor]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["trace"]["options"]["sentence_floor"] == float(floor)
        tokens[floor] = sum(c["token_count"] for c in result["contexts"])
    assert 0 < tokens["2"] < tokens["0"]


def test_cli_queries_go_to_the_read_replica_of_the_environment(db_url, conn, collection_name, embedder, monkeypatch,
                                                               capsys):
    """`windowrag query` answered from the primary whatever WINDOWRAG_READ_DATABASE_URL said
    (windowrag_pg.search honoured it)."""
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(DOCS)
    monkeypatch.setenv("WINDOWRAG_DATABASE_URL", db_url)
    monkeypatch.setenv("WINDOWRAG_READ_DATABASE_URL", "postgresql://u@127.0.0.1:1/db")  # no replica there
    assert main(["query", "rotate keys", "--collection", collection_name]) == 1
    assert "the read replica (WINDOWRAG_READ_DATABASE_URL / read_url=) cannot be used" in capsys.readouterr().err
    monkeypatch.setenv("WINDOWRAG_READ_DATABASE_URL", db_url)  # a replica at head answers
    assert main(["query", "rotate keys", "--collection", collection_name, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["contexts"]


# A Markdown table whose |---| rule is 300 tokens wide, between sentences worth sending.
HOTEL_RATES = ("# Hotel rates\n\nRates are reviewed every year by the travel team.\n\n"
               f"| City | Nightly rate |\n|{'-' * 150}|{'-' * 150}|\n| Paris | 210 EUR |\n| Lyon | 140 EUR |\n\n"
               "Book through the travel portal.\n")


def test_the_token_budget_holds_for_the_text_between_sentences(conn, collection_name, embedder):
    """The budget counted each sentence's own tokens: a Markdown table's wide |---| row between
    two sentences was sent uncounted (a budget of 100: 21 tokens counted, 324 sent)."""
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id="rates", format="markdown", text=HOTEL_RATES)])
    for selection in ("segments", "windows"):
        result = Pipeline(conn, collection=collection_name, embedder=embedder).search(
            "nightly hotel rate in Paris", token_budget=100, min_relevance=None, selection=selection)
        sent = embedder.count_tokens([c.text for c in result.contexts])
        assert result.contexts and sum(sent) <= 100, (selection, sent)
        assert [c.token_count for c in result.contexts] == sent
        stored = conn.execute("SELECT d.text FROM windowrag.documents d JOIN windowrag.collections c"
                              " ON c.id = d.collection_id WHERE c.name = %s", [collection_name]).fetchone()[0]
        assert all(c.lead + stored[c.citation.start_char:c.citation.end_char] == c.text for c in result.contexts)


def test_the_selection_counts_the_text_between_sentences_when_it_plans(conn, collection_name, embedder):
    """The selection counted sentences alone and the budget was held afterwards by cutting
    contexts short: a run across the table's wide |---| row was chosen, then lost sentences.
    Now the runs it plans are the contexts sent, their tokens with the markup inside them."""
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id="rates", format="markdown", text=HOTEL_RATES)])
    result = Pipeline(conn, collection=collection_name, embedder=embedder).search(
        "nightly hotel rate in Paris", token_budget=100, min_relevance=None)
    planned = sorted((s["first_ordinal"], s["last_ordinal"], s["tokens"]) for s in result.trace["segments"])
    sent = sorted((c.citation.first_ordinal, c.citation.last_ordinal, c.token_count) for c in result.contexts)
    assert [p[:2] for p in planned] == [s[:2] for s in sent] and sum(t for *_, t in sent) <= 100
    # a run that starts below the header plans for it in front; it is not sent twice when
    # another context holds it (here: the wide |---| row left out between the two)
    assert all(s[2] <= p[2] for p, s in zip(planned, sent))
    assert any("| Paris | 210 EUR |" in c.text for c in result.contexts)
    assert sum(c.text.count("| City | Nightly rate |") for c in result.contexts) == 1


TRAVEL_POLICY = """# Travel policy

## Reimbursement

Travel is booked through the company portal at least two weeks before the trip. Receipts are kept \
for every expense and uploaded within a month of the return.

The following expenses are never reimbursed:

- Minibar charges and room service.
- Spa treatments and gym day passes.
- Fines for traffic or parking violations.
- Upgrades to business or first class.

Daily limits apply to meals and local transport:

| Expense | Limit |
|---|---|
| Breakfast | 20 EUR |
| Dinner | 60 EUR |
| Taxi | 40 EUR a day |
"""


@pytest.mark.parametrize("query, budget, evidence, lead", [
    ("Are parking fines reimbursed?", 20, "Fines for traffic or parking violations.",
     "The following expenses are never reimbursed:"),
    ("What is the daily limit for a taxi?", 30, "| Taxi | 40 EUR a day |", "| Expense | Limit |"),
])
def test_a_context_inside_a_list_or_table_is_sent_with_its_lead(conn, collection_name, embedder, query, budget,
                                                                 evidence, lead):
    """A run that starts at the third list item was sent as "Fines for traffic or parking
    violations." (reimbursed or not?), a table row without its header: since 0030 the list's
    lead-in or the table's header row goes in front, cited, within the budget; a header row is
    never sent alone nor at the end of a run."""
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id="travel.md", format="markdown", text=TRAVEL_POLICY)])
    result = Pipeline(conn, collection=collection_name, embedder=embedder).search(
        query, token_budget=budget, min_relevance=None)
    (context,) = [c for c in result.contexts if evidence in c.text]
    assert context.text == f"{lead}\n{evidence}" and context.lead == f"{lead}\n"
    citation = context.citation
    assert TRAVEL_POLICY[citation.lead_start_char:citation.lead_end_char] == lead
    assert TRAVEL_POLICY[citation.start_char:citation.end_char] == evidence
    assert f"chars {citation.lead_start_char}–{citation.lead_end_char} + {citation.start_char}–" in citation.label()
    assert context.as_dict()["lead"] == context.lead
    assert sum(embedder.count_tokens([c.text for c in result.contexts])) <= budget
    assert not any(c.text.rstrip().endswith("| Expense | Limit |") for c in result.contexts)


def test_html_table_rows_and_nested_list_items_have_their_leads(conn, collection_name, embedder):
    """An HTML (or DOCX) table's text has no |---| row to mark its header: its first row leads.
    Its list items are written with Markdown's markers, indented when nested, so that a nested
    item leads with its parent item, not with the outer list's lead-in."""
    html = ("<html><body><h1>Travel</h1><p>Receipts are uploaded within a month.</p><table>"
            "<tr><th>Expense</th><th>Limit</th></tr><tr><td>Breakfast</td><td>20 EUR</td></tr>"
            "<tr><td>Dinner</td><td>60 EUR</td></tr><tr><td>Taxi</td><td>40 EUR a day</td></tr></table>"
            "<p>We encourage you to:</p><ul><li>Be respectful. Unacceptable behavior includes:"
            "<ul><li>Trolling.</li><li>Insults.</li></ul></li><li>Be patient.</li></ul></body></html>")
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id="travel.html", format="html", text=html)])
    pipeline = Pipeline(conn, collection=collection_name, embedder=embedder)
    result = pipeline.search("What is the daily limit for a taxi?", token_budget=20, min_relevance=None)
    (context,) = [c for c in result.contexts if "Taxi" in c.text]
    assert context.text.startswith("Expense | Limit\n") and context.text.endswith("Taxi | 40 EUR a day")
    stored = conn.execute("SELECT d.text FROM windowrag.documents d JOIN windowrag.collections c"
                          " ON c.id = d.collection_id WHERE c.name = %s", [collection_name]).fetchone()[0]
    found = pipeline.retriever.candidates_with("Is trolling unacceptable?", PipelineOptions().candidate_search())
    leads = {stored[c.start_char:c.end_char]: stored[c.lead.start_char:c.lead.end_char] if c.lead else None
             for c in found.sentences}
    assert leads["Trolling."] == leads["Insults."] == "Be respectful. Unacceptable behavior includes:"
    assert leads["Be patient."] == leads["Be respectful. Unacceptable behavior includes:"] == "We encourage you to:"


def test_a_raw_html_table_in_markdown_leads_its_rows_with_its_first_row(conn, collection_name, embedder):
    """Markdown pages exported from Google Docs hold their tables as raw HTML (48 of the
    handbook's 834 pages): each row is one unit and the table's first row leads it, as in an
    HTML document; the markup between the cells is the document's own text and is sent."""
    page = ("# Data retention\n\nEach system keeps its data as follows.\n\n<table>\n  <tr>\n"
            "   <td><strong>System</strong>\n   </td>\n   <td><strong>Retention period</strong>\n   </td>\n"
            "  </tr>\n  <tr>\n   <td>Slack messages\n   </td>\n   <td>1 year\n   </td>\n  </tr>\n"
            "  <tr>\n   <td>Qualys vulnerability scan results\n   </td>\n   <td>6 months\n   </td>\n  </tr>\n"
            "</table>\n")
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id="retention.md", format="markdown", text=page)])
    result = Pipeline(conn, collection=collection_name, embedder=embedder).search(
        "How long are Qualys vulnerability scan results kept?", token_budget=60, min_relevance=None)
    (context,) = [c for c in result.contexts if "Qualys" in c.text]
    header = "<strong>System</strong>\n   </td>\n   <td><strong>Retention period</strong>"
    assert context.text == f"{header}\nQualys vulnerability scan results\n   </td>\n   <td>6 months"
    citation = context.citation
    assert page[citation.lead_start_char:citation.lead_end_char] == header
    assert page[citation.start_char:citation.end_char] == context.text.removeprefix(context.lead)
    assert sum(embedder.count_tokens([c.text for c in result.contexts])) <= 60


def test_a_small_budget_is_not_spent_on_bare_headings(conn, samples_collection, embedder):
    """At 30 tokens the dental question got its answer and four contexts that were a heading
    alone ("Health insurance", "Benefits", ...): a heading has no value of its own since 0029, so
    every context starts and ends on a sentence, and its section's heading is in its citation."""
    result = Pipeline(conn, collection=samples_collection, embedder=embedder).search(
        "How much does the company pay towards dental insurance?", token_budget=30)
    assert result.contexts and any("full premium" in c.text for c in result.contexts)
    kinds = conn.execute("SELECT d.external_id, s.ordinal, s.kind FROM windowrag.sentences s"
                         " JOIN windowrag.documents d ON d.id = s.document_id"
                         " JOIN windowrag.collections c ON c.id = d.collection_id WHERE c.name = %s",
                         [samples_collection]).fetchall()
    kind = {(doc, ordinal): k for doc, ordinal, k in kinds}
    assert "heading" in kind.values()
    for c in result.contexts:
        where = c.citation
        edges = {kind[(where.document_id, where.first_ordinal)], kind[(where.document_id, where.last_ordinal)]}
        assert "heading" not in edges, c.text


def test_a_collection_of_headings_alone_says_why_nothing_is_sent(conn, collection_name, embedder):
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest([SourceDocument(
        external_id="toc", format="markdown", text="# Handbook\n\n## Dental insurance\n\n## Parental leave\n")])
    result = Pipeline(conn, collection=collection_name, embedder=embedder).search(
        "dental insurance", token_budget=100, min_relevance=None)
    assert result.abstained and not result.contexts
    assert result.trace["abstain"] == "only headings matched the query"


@pytest.mark.parametrize("selection", ["segments", "windows"])
def test_a_document_replaced_during_a_search_never_lends_its_place_to_another(conn, collection_name, embedder,
                                                                              selection):
    """The texts were read in a second statement and paired with the contexts in order: a
    document replaced in between had no row, and the next document's text went to its context
    (the windows selection raised IndexError)."""
    from windowrag_pg.db.sqlfiles import load_sql
    from windowrag_pg.pipeline import PipelineOptions

    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(DOCS)
    pipeline = Pipeline(conn, collection=collection_name, embedder=embedder)
    steps = pipeline.steps("rotate keys lunch", PipelineOptions(k=3, min_relevance=None, selection=selection))
    rows, replaced = None, False
    try:
        while True:
            statement = steps.send(rows)
            reads_text = statement.query in (load_sql("document_slices"), load_sql("segment_sentences"))
            if reads_text and not replaced:  # between the search and the text: a new version of "keys"
                changed = dataclasses.replace(DOCS[0], text=DOCS[0].text + " Keys live in the vault.")
                assert Ingestor(conn, collection=collection_name, embedder=embedder).ingest([changed]).replaced == 1
                replaced = True
            rows = conn.execute(statement.query, statement.params, prepare=statement.prepare).fetchall()
    except StopIteration as done:
        result = done.value
    assert replaced
    stored = dict(conn.execute("SELECT d.external_id, d.text FROM windowrag.documents d JOIN windowrag.collections c"
                               " ON c.id = d.collection_id WHERE c.name = %s", [collection_name]).fetchall())
    for context in result.contexts:  # every context is its own document's text, or left out
        assert context.citation.document_id == "lunch"
        assert stored["lunch"][context.citation.start_char:context.citation.end_char] == context.text
    assert any("left out: their document was replaced or deleted" in note for note in result.trace["notes"])


def test_deleting_a_collection_does_not_stall_searches_of_the_others(db_url, conn, collection_name, embedder):
    """delete_collection's plain DROP INDEX locked the whole shared sentences table: it queued
    behind a long reader and every search of every collection queued behind it."""
    import threading
    import time

    from windowrag_pg.db.connection import connect

    other = f"{collection_name}_kept"
    for name in (collection_name, other):
        Ingestor(conn, collection=name, embedder=embedder).ingest(DOCS)
    reader = connect(db_url)  # a long report holding the table
    reader.execute("SELECT count(*) FROM windowrag.sentences").fetchone()
    deleting = threading.Thread(target=lambda: wr.delete_collection(connect(db_url, autocommit=True), collection_name))
    try:
        deleting.start()
        time.sleep(1.0)  # the drop now waits for the long reader
        started = time.monotonic()
        found = Pipeline(conn, collection=other, embedder=embedder).search("rotate keys", min_relevance=None)
        assert found.contexts and time.monotonic() - started < 5
    finally:
        reader.rollback()
        reader.close()
        deleting.join(30)
    assert not deleting.is_alive()
    assert conn.execute("SELECT count(*) FROM windowrag.collections WHERE name = %s", [collection_name]).fetchone() == (0,)
    wr.delete_collection(conn, other)


def test_a_search_outlives_its_connection_being_dropped(db_url, conn, collection_name, embedder):
    """After a server restart the first search raised psycopg's AdminShutdown ("terminating
    connection due to administrator command"); the next one reconnected. A search's statements
    only read: the statement runs again on a new connection."""
    import asyncio

    Ingestor(conn, collection=collection_name, embedder=embedder).ingest(DOCS)
    first = wr.search("rotate keys", collection=collection_name, url=db_url, min_relevance=None)
    kept = wr._pipeline(collection_name, db_url, None).source._conn
    conn.execute("SELECT pg_terminate_backend(%s)", [kept.info.backend_pid])
    again = wr.search("rotate keys", collection=collection_name, url=db_url, min_relevance=None)
    assert [c.text for c in again.contexts] == [c.text for c in first.contexts]

    async def twice():
        found = await wr.asearch("rotate keys", collection=collection_name, url=db_url, min_relevance=None)
        pipeline = next(iter(wr._async_pipelines[asyncio.get_running_loop()].values()))
        conn.execute("SELECT pg_terminate_backend(%s)", [pipeline.source._conn.info.backend_pid])
        found_again = await wr.asearch("rotate keys", collection=collection_name, url=db_url, min_relevance=None)
        await wr.aclose()
        return found, found_again

    found, found_again = asyncio.run(twice())
    assert [c.text for c in found_again.contexts] == [c.text for c in found.contexts] == [c.text for c in first.contexts]


@pytest.mark.parametrize("selection, budget, rse", [("windows", None, None), ("segments", None, None),
                                                    ("windows", 30, None), ("windows", None, "balanced")])
def test_a_context_over_several_sections_is_cited_by_the_headings_they_share(conn, samples_collection, embedder,
                                                                             selection, budget, rse):
    """With clamp='document' a fixed window may run over sections: its citation named one of them
    (its hit's, "Learning budget" for text from "Dental" to "Time off", migration 0031), which did
    not hold the text. It names the headings they all share; a context inside one section keeps
    that section's path. The budget-first selection's runs stay within a section. A window cut to
    a budget, or an RSE segment of it, is cited by its own sentences' sections (found by a tester:
    they kept the whole window's path)."""
    pipeline = Pipeline(conn, collection=samples_collection, embedder=embedder)
    stored = dict(conn.execute("SELECT d.external_id, d.text FROM windowrag.documents d JOIN windowrag.collections c"
                               " ON c.id = d.collection_id WHERE c.name = %s", [samples_collection]).fetchall())
    paths = {(external_id, ordinal): tuple(path) for external_id, ordinal, path in conn.execute(
        "SELECT d.external_id, s.ordinal, sec.heading_path FROM windowrag.sentences s"
        " JOIN windowrag.sections sec ON sec.id = s.section_id JOIN windowrag.documents d ON d.id = s.document_id"
        " JOIN windowrag.collections c ON c.id = d.collection_id WHERE c.name = %s", [samples_collection]).fetchall()}
    result = pipeline.search("How much is the learning budget?", selection=selection, clamp="document", window=3,
                             k=3, token_budget=budget, min_relevance=None, rse=rse)
    crossing = within = 0
    for context in result.contexts:
        citation = context.citation
        spanned = {paths[(citation.document_id, o)] for o in range(citation.first_ordinal, citation.last_ordinal + 1)}
        depth = 0  # the headings every spanned section begins with, counted here independently
        while all(len(path) > depth and path[depth] == next(iter(spanned))[depth] for path in spanned):
            depth += 1
        assert citation.section_path == next(iter(spanned))[:depth]
        crossing += len(spanned) > 1
        within += len(spanned) == 1 and len(next(iter(spanned))) > 1
        assert stored[citation.document_id][citation.start_char:citation.end_char] in context.text
    if budget is not None:
        assert within > 0  # a part of a window over sections, cited by its one section
    elif rse is None:
        assert crossing > 0 if selection == "windows" else crossing == 0


def test_token_count_is_the_texts_count_with_or_without_a_budget(conn, samples_collection, embedder):
    """A context led by its table's header: the selection prices the lead with a line break, which
    BERT's tokenizer does not count; with no budget the context said 49 tokens for 48 (a budget
    had the contexts counted whole)."""
    pipeline = Pipeline(conn, collection=samples_collection, embedder=embedder)
    for budget in (None, 1200):
        result = pipeline.search("equipment laptop budget", token_budget=budget, min_relevance=None)
        assert any(c.lead for c in result.contexts)
        assert [c.token_count for c in result.contexts] == embedder.count_tokens([c.text for c in result.contexts])


def test_a_document_id_given_twice_in_one_ingest_is_refused_unless_it_is_the_same_document(conn, collection_name,
                                                                                            embedder, tmp_path):
    """Two files' records with one id (or two framework documents): the second replaced the first
    silently and both were counted. It is refused, naming the first; the same content again (a
    file and a link to it) is passed over and counted once."""
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text('{"id": "same", "text": "The first file says apples are red."}\n')
    second.write_text('{"id": "same", "text": "The second file says bananas are yellow."}\n')
    (tmp_path / "link.jsonl").symlink_to(first)
    ingestor = Ingestor(conn, collection=collection_name, embedder=embedder)
    report = ingestor.ingest(wr.iter_sources([first, tmp_path / "link.jsonl", second]))
    assert (report.added, report.replaced, report.unchanged) == (1, 0, 0)
    assert [(e.name, e.message) for e in report.errors] == [
        (f"{second}:1", f"id 'same' is already the id of {first}:1 in this ingest, with other content: "
                        "this document is not ingested")]
    texts = conn.execute("SELECT d.text FROM windowrag.documents d JOIN windowrag.collections c ON c.id = d.collection_id"
                         " WHERE c.name = %s", [collection_name]).fetchall()
    assert texts == [("The first file says apples are red.",)]


@pytest.mark.parametrize("fields, message", [
    ({"format": "markdown", "data": b"# Title\n\nHello there."}, "takes its text in 'text' (a str), not bytes in 'data'"),
    ({"format": "text", "text": "Hello.", "data": b"Hello."}, "takes its text in 'text' (a str), not bytes in 'data'"),
    ({"format": "pdf", "text": "Hello.", "data": b"%PDF-1.4"}, "takes its bytes in 'data', not 'text'"),
])
def test_a_document_with_its_content_in_the_wrong_field_is_refused_by_name(conn, collection_name, embedder,
                                                                           fields, message):
    """Bytes given to a Markdown document were taken for no text ("empty document"), and with
    text too they were dropped without a word."""
    report = Ingestor(conn, collection=collection_name, embedder=embedder).ingest(
        [SourceDocument(external_id="doc", **fields)])
    assert report.added == 0 and len(report.errors) == 1 and message in report.errors[0].message


def test_token_budget_0_in_python_says_that_none_is_no_budget():
    with pytest.raises(wr.QueryError, match="None in Python, 0 on the command line: no budget"):
        PipelineOptions(token_budget=0)


def test_a_query_that_only_an_empty_sections_heading_matches_is_abstained_on(conn, collection_name, embedder):
    """"## Zebra crossing rules" with nothing under it made the query look answered (relevance
    0.999), and the contexts sent were pasta and tomatoes at a value of 0.000. A heading over
    text (a FAQ's question over its answer) still gets that text."""
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest([
        SourceDocument(external_id="a.md", format="markdown",
                       text="# Alpha\n\n## Zebra crossing rules\n\n## Other\n\nUnrelated text about cooking pasta.\n"),
        SourceDocument(external_id="faq.md", format="markdown",
                       text="# FAQ\n\n## How do I reset my password?\n\nOpen the account page and choose "
                            "Forgot password. A link arrives by email within minutes.\n"),
        SourceDocument(external_id="b.txt", format="text", text="Notes on gardening. Water tomatoes daily.\n")])
    pipeline = Pipeline(conn, collection=collection_name, embedder=embedder)
    refused = pipeline.search("Zebra crossing rules")
    assert refused.abstained and not refused.contexts
    assert "only headings matched the query" in refused.trace["abstain"]
    answered = pipeline.search("How do I reset my password?")
    assert not answered.abstained and "Forgot password" in answered.contexts[0].text


def test_the_cli_tables_show_brackets_in_ids_titles_and_names_as_they_are(db_url, conn, collection_name, embedder,
                                                                          capsys):
    """Rich read "[bold]two" as markup: the listed id was "two", which `windowrag delete` did not
    find, "Release notes [draft]" lost its "[draft]" and a collection "[red]x" was listed as "x"."""
    name = f"[red]{collection_name}"
    Ingestor(conn, collection=name, embedder=embedder).ingest([
        SourceDocument(external_id="[bold]two", format="text", title="Release notes [draft]",
                       text="The release ships in May.")])
    try:
        assert main(["--database-url", db_url, "documents", "--collection", name]) == 0
        out = capsys.readouterr().out
        assert "[bold]two" in out and "Release notes [draft]" in out
        assert main(["--database-url", db_url, "stats"]) == 0
        assert name in capsys.readouterr().out
    finally:
        wr.delete_collection(conn, name)


def test_a_cli_source_filter_matches_the_path_as_typed_and_resolved(db_url, conn, collection_name, embedder,
                                                                     tmp_path, monkeypatch, capsys):
    """A file ingested by path is stored under its absolute path; a LangChain or LlamaIndex
    document keeps the source it was given, a relative path too. `--filter source=texts/keys.txt`
    was resolved to the absolute path and no longer matched the second."""
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "keys.txt").write_text("Hardware security keys are mandatory for the cloud console.\n")
    monkeypatch.chdir(tmp_path)
    Ingestor(conn, collection=collection_name, embedder=embedder).ingest([
        *wr.iter_sources(["texts/keys.txt"]),
        SourceDocument(external_id="from-a-framework", format="text", source="texts/keys.txt",
                       text="Security keys are handed out by the IT desk.")])
    assert main(["--database-url", db_url, "documents", "--collection", collection_name, "--json",
                 "--filter", "source=texts/keys.txt"]) == 0
    ids = sorted(row["id"] for row in json.loads(capsys.readouterr().out))
    assert ids == sorted([str(tmp_path / "texts" / "keys.txt"), "from-a-framework"])


def test_no_budget_plans_with_all_candidates_and_ignored_options_are_noted(conn, contractnli_collection,
                                                                           samples_collection, embedder):
    """Found by testers: token_budget=None ("no budget") planned within 8,192 tokens, with token
    units coarse enough that it sent 6,774 tokens where a budget of 100,000 sent 10,756; the
    cross-encoder's settings without rerank=True were ignored silently; a sentence_floor that
    priced every sentence out was reported as "no sentence fits the token budget"; a query longer
    than the embedder reads was cut without a word."""
    pipeline = Pipeline(conn, collection=contractnli_collection, embedder=embedder)
    wide = dict(k=1000, candidates=1000, radius=1000, min_relevance=None)
    unbounded = pipeline.search("confidential information disclosure", token_budget=None, **wide)
    budgeted = pipeline.search("confidential information disclosure", token_budget=100_000, **wide)
    sent = sum(c.token_count for c in unbounded.contexts)
    assert sent > 8192 and sent == sum(c.token_count for c in budgeted.contexts)

    samples = Pipeline(conn, collection=samples_collection, embedder=embedder)
    result = samples.search("What is the learning budget?", rerank_tokens=64)
    assert "rerank_tokens=64 applies with rerank=True (the cross-encoder is off)" in result.trace["notes"]
    windows = samples.search("What is the learning budget?", selection="windows", rerank_candidates=7)
    assert any(n.startswith("rerank_candidates=7 applies") for n in windows.trace["notes"])
    floor = samples.search("What is the learning budget?", sentence_floor=0.9, min_relevance=None)
    assert floor.abstained and "sentence_floor 0.9" in floor.trace["abstain"]
    pasted = " ".join(["Some unrelated words about the weather and the sea."] * 60) + " What is the learning budget?"
    notes = samples.search(pasted, min_relevance=None).trace["notes"]
    assert any(n.startswith("the query is ") and "reads its first 512" in n for n in notes), notes
    assert not any(n.startswith("the query is ") for n in result.trace["notes"])


def test_rse_segments_are_scored_by_their_own_best_hit(conn, samples_collection, embedder):
    """Found by a tester: with rse, every segment cut from one window carried the window's score,
    so a segment without the window's best hit could rank first. A segment's score is its own best
    hit's rrf_score over the best window's (0 without a hit), as the README says."""
    pipeline = Pipeline(conn, collection=samples_collection, embedder=embedder)
    from .conftest import SAMPLE_QUERIES

    for query in SAMPLE_QUERIES:
        result = pipeline.search(query, selection="windows", rse="find_all", token_budget=None, min_relevance=None)
        best_hits = [max((h["rrf_score"] for h in c.hits), default=0.0) for c in result.contexts]
        scores = [c.score for c in result.contexts]
        assert scores == sorted(scores, reverse=True)
        scales = {round(b / s, 9) for b, s in zip(best_hits, scores) if s > 0}
        assert len(scales) <= 1, (query, scores, best_hits)
        assert all(s == 0 for b, s in zip(best_hits, scores) if b == 0)


def test_bm25_mode_answers_what_it_finds_and_the_cross_encoder_decides(conn, samples_collection, embedder):
    """Found by a tester: mode 'bm25' abstained on nearly every question (28 of 29 in-corpus
    contract hypotheses): the relevance model reads cosines, which that mode has none of (relevance
    0.006 for "How much is the learning budget?"). In mode 'bm25' the cross-encoder's check decides."""
    pipeline = Pipeline(conn, collection=samples_collection, embedder=embedder)
    answered = pipeline.search("How much is the learning budget?", mode="bm25")
    assert not answered.abstained and answered.trace["verification"] is not None
    assert "learning budget" in answered.contexts[0].text.lower()
    refused = pipeline.search("What is the budget of the French army?", mode="bm25")
    assert refused.abstained and refused.trace["abstain"].startswith("mode 'bm25' has no cosines")
    assert not pipeline.search("What is the budget of the French army?", mode="bm25", min_relevance=None).abstained
    unchecked = pipeline.search("What is the budget of the French army?", mode="bm25", verify_below=None)
    assert not unchecked.abstained and unchecked.trace["verification"] is None


def test_control_characters_of_stored_text_reach_the_terminal_as_escapes(db_url, conn, collection_name, embedder,
                                                                        capsys):
    """Found by a tester: an ESC in a document's text, title or id went to the terminal as it was
    (OSC 52 clipboard writes, a cursor move and line erase that forged a line, a cleared screen)."""
    from windowrag_pg.cli import main

    Ingestor(conn, collection=collection_name, embedder=embedder).ingest([
        SourceDocument(external_id="id\x1b]0;owned\x07", format="text", title="Title \x1b[2J",
                       text="Dental cleanings are covered twice a year.\x1b[1A\x1b[2KFAKE: all costs are covered. "
                            "\x1b]52;c;aGk=\x07Claims go to the benefits team.")])
    assert main(["--database-url", db_url, "query", "dental cleanings", "--collection", collection_name,
                 "--min-relevance", "none"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[1A\\x1b[2KFAKE" in out and "\\x1b]52;c;aGk=\\x07" in out and "Title \\x1b[2J" in out
    assert main(["--database-url", db_url, "documents", "--collection", collection_name]) == 0
    listed = capsys.readouterr().out
    assert "\x1b" not in listed and "\\x1b]0;owned" in listed


def test_a_link_in_a_folder_to_a_file_outside_it_is_not_read(tmp_path):
    """Found by a tester: an uploaded folder holding passwd.txt -> /etc/passwd was ingested and its
    lines served as contexts. A link out of the folder is named and not read; a link within it,
    and the outside file named on its own, are read."""
    from windowrag_pg.sources import SourceError, iter_sources

    outside = tmp_path / "outside.txt"
    outside.write_text("A private file outside the folder.")
    folder = tmp_path / "upload"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "guide.md").write_text("# Guide\n\nThe guide itself.")
    (folder / "passwd.txt").symlink_to(outside)
    (folder / "guide-link.md").symlink_to(folder / "docs" / "guide.md")
    read = list(iter_sources([folder]))
    errors = [item for item in read if isinstance(item, SourceError)]
    assert [e.name for e in errors] == [str(folder / "passwd.txt")]
    assert f"a link out of the folder (to {outside})" in errors[0].message
    assert sorted(item.origin for item in read if not isinstance(item, SourceError)) == [
        str(folder / "docs" / "guide.md"), str(folder / "guide-link.md")]
    assert [item.text for item in iter_sources([folder / "passwd.txt"])] == ["A private file outside the folder."]
