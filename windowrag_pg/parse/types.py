"""Value types shared by parsing and splitting: no I/O here.

Offsets are 0-based, end exclusive, counted in Python ``str`` characters of
``ParsedDocument.text`` (the text stored in ``windowrag.documents.text``).
Every unit satisfies ``document.text[start_char:end_char] == unit.text``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Kinds of unit stored in windowrag.sentences.kind.
UNIT_KINDS = ("sentence", "list_item", "table_row", "heading", "code", "chunk")


@dataclass(frozen=True, slots=True)
class Block:
    """A structural block found by the parser: paragraph, heading, list item, table row or code."""

    kind: str  # "paragraph" | "heading" | "list_item" | "table_row" | "code"
    start_char: int
    end_char: int
    page: int | None = None  # 1-based PDF page, when known


@dataclass(slots=True)
class Section:
    """A run of the document under one heading (the innermost one).

    Sections do not overlap: a section ends where the next heading of any level begins.
    ``heading_path`` lists the headings from the outermost to this one ("Benefits", "Dental").
    The part before the first heading is a section with an empty path and level 0.
    """

    ordinal: int
    heading_path: tuple[str, ...]
    level: int
    start_char: int
    end_char: int
    blocks: list[Block] = field(default_factory=list)


@dataclass(slots=True)
class ParsedDocument:
    text: str
    sections: list[Section]
    title: str | None = None
    format: str = "text"
    # what was read with a loss, for the ingest report ("page 2: its text could not be read")
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Unit:
    """The retrieval unit: one sentence (or list item, table row, heading, code block)."""

    kind: str
    section_ordinal: int
    start_char: int
    end_char: int
    text: str
    page: int | None = None
