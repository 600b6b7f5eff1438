"""The adapters' shared, framework-free part: option checks, metadata, document conversion."""
from __future__ import annotations

import re
from importlib import metadata

import pytest

from windowrag_pg.assemble.context import AssembledContext, Citation
from windowrag_pg.integrations.common import (
    METADATA_KEYS, check_search_options, context_id, context_metadata, source_document,
)
from windowrag_pg.retrieve.retriever import QueryError


def test_search_options_are_checked_by_name_and_value():
    assert check_search_options({"k": 3, "token_budget": 500, "rerank": True}) == {"k": 3, "token_budget": 500,
                                                                                 "rerank": True}
    with pytest.raises(QueryError, match="unknown search option.*similarity_top_k"):
        check_search_options({"similarity_top_k": 3})
    with pytest.raises(QueryError, match="rerank_tokens must be"):
        check_search_options({"rerank_tokens": -1})


def test_metadata_and_id_of_a_context():
    citation = Citation(document_id="a.md", title="A", section_path=("Top", "Sub"), start_char=10, end_char=42,
                        first_ordinal=1, last_ordinal=3)
    context = AssembledContext(citation=citation, text="…", score=0.5, token_count=9, document_key=7)
    assert context_metadata(context) == {"document_id": "a.md", "title": "A", "section_path": ["Top", "Sub"],
                                         "start_char": 10, "end_char": 42, "score": 0.5}
    assert tuple(context_metadata(context)) == METADATA_KEYS
    assert context_id(context) == "a.md:10-42"


def test_framework_documents_become_source_documents():
    # Markdown and HTML are titled by their first heading (title None here: the parser's), as a
    # file's ingest titles them; plain text by the file name
    md = source_document(external_id="1", text="# T\n\nx.", metadata={"file_name": "notes/guide.md", "k": 1})
    assert (md.format, md.title, md.metadata) == ("markdown", None, {"file_name": "notes/guide.md", "k": 1})
    text = source_document(external_id="4", text="x.", metadata={"file_name": "notes/plain.txt"})
    assert (text.format, text.title) == ("text", "plain")
    html = source_document(external_id="2", text="<p>x</p>", metadata={"source": "https://x/y.html", "title": "Y"})
    assert (html.format, html.title, html.source) == ("html", "Y", "https://x/y.html")
    plain = source_document(external_id="3", text="x.", metadata=None, format="text")
    assert (plain.format, plain.title, plain.metadata) == ("text", None, {})


def test_the_core_install_needs_neither_framework():
    requirements = metadata.requires("windowrag-pg") or []
    core = [r for r in requirements if "extra ==" not in r]
    assert not [r for r in core if re.match(r"(llama|langchain)", r)]
    extras = {r.split(";")[1].split("==")[1].strip().strip("'\"") for r in requirements if "extra ==" in r}
    assert {"llama-index", "langchain"} <= extras
