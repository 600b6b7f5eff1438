"""PDF bytes -> sections of paragraph blocks, with pypdf's text extraction.

PDF has no usable offsets of its own, so the stored ``ParsedDocument.text`` is built here: the
text of each page's blocks, lines inside a block joined by "\\n", blocks (and pages) joined by a
blank line ("\\n\\n"). Each block carries its 1-based page number. How printed lines become
blocks (page furniture, tables of contents, paragraphs, hyphenation, page breaks, headings from
the outline) is parse/pdf_layout.py, pure; here pypdf is read: the pages' lines, the outline, the
title, and what could not be read (the ingest's warnings: a page pypdf fails on, pages without
a text layer). Ligatures (U+FB00–FB06) are spelt out. Without an outline, one section.
"""
from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

from windowrag_pg.parse import HeadingMark, ParseError, build_sections
from windowrag_pg.parse.pdf_layout import (
    continues, document_vocabulary, heading_key, outline_lines, page_blocks, page_width, split_after_first_sentence,
    with_outline_headings, without_dot_leaders, without_page_furniture,
)
from windowrag_pg.parse.types import Block, ParsedDocument

BLOCK_SEPARATOR = "\n\n"
# a /Title a tool wrote, not a person
_TOOL_TITLE = re.compile(r"(?i)^(?:microsoft\s+\w+\s+-\s.*|untitled(?:[\s-]*document)?[\s-]*\d*|title|document\s*\d*|doc\d+|word document|"
                         r"presentation\d*|powerpoint presentation|book\d+|(?:slide|layout|seite|page)\s*\d+|"
                         r"\S+\.(?:docx?|pdf|odt|rtf|txt|pptx?|xlsx?|indd|tex|dvi|ps|html?)|[^\s]*[_\\/][^\s]*|.*[\\/].*)$")
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                            "\ufb05": "st", "\ufb06": "st"})


def parse_pdf_bytes(data: bytes, *, title: str | None = None) -> ParsedDocument:
    reader = _open(data)
    page_lines, warnings = _read_pages(reader)
    entries = outline_entries(reader)
    page_lines = without_dot_leaders(without_page_furniture(page_lines, protected=outline_lines(page_lines, entries)))
    paged_blocks = _blocks(page_lines)
    if not paged_blocks:
        # why the pages gave nothing, when a page said so (found by a tester: pypdf's decompression
        # limit on a stream bomb was reported as "scanned images?")
        failures = [w for w in warnings if "could not be read" in w]
        why = "; ".join(failures[:3]) if failures else "scanned images?"
        raise ParseError(f"unreadable PDF: no extractable text in {len(reader.pages)} page(s) ({why})")
    parts: list[str] = []
    items: list[Block | HeadingMark] = []
    length = 0
    placed: set[str] = set()
    for page_number, block_text, heading in with_outline_headings(paged_blocks, entries):
        if parts:
            parts.append(BLOCK_SEPARATOR)
            length += len(BLOCK_SEPARATOR)
        parts.append(block_text)
        if heading is not None:
            items.append(HeadingMark(length, min(heading[0], 6), heading[1]))
            placed.add(heading[1])
        items.append(Block("paragraph" if heading is None else "heading", length, length + len(block_text),
                           page=page_number))
        length += len(block_text)
    text = "".join(parts)
    # a bookmark opens a section where its title is printed on its page: one not printed there
    # (a tool's bookmarks, a title worded otherwise) opens none, and the reader is told
    unplaced = [title for _, title, _ in entries if heading_key(title) and title not in placed]
    if unplaced:
        warnings = [*warnings, f"{len(unplaced)} of the outline's {len(entries)} entries are not printed on their "
                               f"pages as headings ({', '.join(repr(t) for t in unplaced[:3])}"
                               f"{', …' if len(unplaced) > 3 else ''}): no section opens at them"]
    return ParsedDocument(text=text, sections=build_sections(len(text), items), format="pdf", warnings=warnings,
                          title=title if title is not None else _metadata_title(reader))


def _open(data: bytes):
    """A pypdf reader of DATA, or ParseError saying why not."""
    import pypdf  # imported here: only PDF ingestion pays for it

    if b"%PDF-" not in bytes(data[:1024]):  # the header may follow a little junk, no more
        start = bytes(data[:40]).decode("utf-8", "replace").split("\n")[0].strip()
        raise ParseError("unreadable PDF: not a PDF file (no %PDF- header" +
                         (f"; it starts with {start!r})" if start else ": it is empty)"))
    # pypdf logs what it repairs ("invalid pdf header", "EOF marker not found") without naming
    # the file: a damaged file is reported once, by name, from the error below
    with _pypdf_log(logging.ERROR):
        try:
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise ParseError("unreadable PDF: encrypted with a password")
            list(reader.pages)
        except ParseError:
            raise
        except Exception as error:  # pypdf raises many types for damaged files
            raise ParseError(f"unreadable PDF: {type(error).__name__}: {error}") from None
    return reader


def _read_pages(reader) -> tuple[list[tuple[int, list[str]]], list[str]]:
    """(page, stripped lines) of the pages with text, and warnings for the pages left out."""
    page_lines: list[tuple[int, list[str]]] = []
    unreadable: list[str] = []
    empty: list[int] = []
    # pypdf logs a broken page ("Error -3 while decompressing data") without the file's name: its
    # messages are caught and reported with the page, in the ingest's warnings
    caught = _Caught()
    with _pypdf_log(logging.WARNING, handler=caught):
        for page_number, page in enumerate(reader.pages, start=1):
            caught.messages.clear()
            try:
                page_text = page.extract_text() or ""
            except Exception as error:  # one broken page (bad font, bad stream) should not lose the others
                caught.messages.append(f"{type(error).__name__}: {error}")
                page_text = ""
            if caught.messages:
                lost = "left out" if not page_text.strip() else "read in part"
                unreadable.append(f"page {page_number} could not be read ({caught.messages[0]}); {lost}")
            elif not page_text.strip():
                empty.append(page_number)
            if page_text.strip():
                page_lines.append((page_number, [line.strip() for line in _clean(page_text).split("\n")]))
    if empty:
        unreadable.append(f"{_count_pages(empty)} without text (scanned images?) left out: {_page_list(empty)}")
    return page_lines, unreadable


def _blocks(page_lines: list[tuple[int, list[str]]]) -> list[tuple[int, str]]:
    """(page, text) of the paragraph blocks, a sentence cut by a page break made whole."""
    vocabulary = document_vocabulary(page_lines)
    blocks: list[tuple[int, str]] = []
    previous_width = 0
    for page_number, lines in page_lines:
        for number, block_text in enumerate(page_blocks(lines, vocabulary=vocabulary)):
            if number == 0 and blocks and continues(blocks[-1][1], previous_width, block_text):
                head, block_text = split_after_first_sentence(block_text)
                blocks[-1] = (blocks[-1][0], f"{blocks[-1][1]}\n{head}")
                if not block_text:
                    continue
            blocks.append((page_number, block_text))
        previous_width = page_width(lines)
    return blocks


@contextmanager
def _pypdf_log(level: int, *, handler: logging.Handler | None = None) -> Iterator[None]:
    """pypdf's logger at LEVEL (with HANDLER alone, nothing passed on) for a while."""
    log = logging.getLogger("pypdf")
    saved = (log.level, log.propagate)
    log.setLevel(level)
    if handler is not None:
        log.addHandler(handler)
        log.propagate = False
    try:
        yield
    finally:
        if handler is not None:
            log.removeHandler(handler)
        log.setLevel(saved[0])
        log.propagate = saved[1]


class _Caught(logging.Handler):
    """pypdf's warnings while one page is read."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(" ".join(record.getMessage().split())[:200])


def _count_pages(pages: list[int]) -> str:
    return f"{len(pages)} page" + ("s" if len(pages) != 1 else "")


def _page_list(pages: list[int]) -> str:
    shown = ", ".join(str(p) for p in pages[:10])
    return shown + (f", … ({len(pages) - 10} more)" if len(pages) > 10 else "")


def outline_entries(reader) -> list[tuple[int, str, int]]:
    """(level from 1, title, 1-based destination page) of the PDF's bookmarks, in order; [] when
    it has none or they cannot be read."""
    entries: list[tuple[int, str, int]] = []

    def walk(items, level: int) -> None:
        for item in items:
            if isinstance(item, list):  # the children of the entry before
                walk(item, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(item) + 1
                title = " ".join(str(item.title).split())
            except Exception:  # a broken or external destination: that entry only
                continue
            if title and page >= 1:
                entries.append((level, title, page))

    try:
        walk(reader.outline, 1)
    except Exception:
        return []
    return entries


def _clean(page_text: str) -> str:
    """Normalise line breaks, spell out ligatures; drop what Postgres text cannot hold (NUL, lone
    surrogates)."""
    page_text = page_text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").translate(_LIGATURES)
    return page_text.encode("utf-8", "replace").decode("utf-8")


def _metadata_title(reader) -> str | None:
    """The document's /Title, unless it is what a tool wrote ("Microsoft Word - nda_v3.docx",
    "untitled", a file name)."""
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception:
        return None
    if not isinstance(title, str):
        return None
    title = " ".join(title.split())
    if _TOOL_TITLE.match(title) or not re.search(r"[^\W\d_]", title):
        return None
    return title or None
