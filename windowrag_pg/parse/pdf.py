"""PDF bytes -> one section of paragraph blocks, with pypdf's text extraction.

PDF has no usable offsets of its own, so the stored ``ParsedDocument.text`` is built here:
the text of each page's blocks, lines inside a block joined by "\\n", blocks (and pages) joined
by a blank line ("\\n\\n"). Each block carries its 1-based page number. Pages without text are
skipped (their number is not reused).

pypdf returns one line per printed line and no paragraph breaks. A printed paragraph fills the
line width except on its last line, so a block runs over "full" lines and ends at a short line
(last line of a paragraph, heading, list item) or a blank line. That keeps sentences that wrap
across lines whole without gluing a heading to the paragraph after it.

What a page prints around its text is left out: page numbers ("12", "Page 3 of 10", "- 4 -",
"iv") and running headers and footers among a page's first and last two lines: a line seen so
on at least three pages, and a third of them, the same but for its numbers ("Shared MIME-info
Database"), and a short line that starts or ends with the page's printed number, when printed
numbers follow the pages at one offset on as many ("Chapter 4: Function reference 9" on page 12)
and the page does not print its number alone (then "1 Introduction" on page 1 is a heading).
Entries of a table of contents or an index ("Simple parsing . . . . . 4") are left out too: they
point at the text, which is there. A sentence cut by a
page break is made whole again: when a page's last block ends without a sentence's end and the
next page opens in lower case, that page's text up to its first sentence end joins the block
before (the sentence keeps the page it starts on). A word hyphenated at a line end ("exam-" /
"ination", both sides lower case) is joined, and typographic ligatures (U+FB00–FB06) are spelt
out, so that full-text search and the embedder see the words.

Sections come from the outline (bookmarks), when the PDF has one: each entry is looked for, in
order, on its destination page as a printed line that ends with its title (numbers, case and
punctuation aside: "2.13. Nonregular files" finds "Non-regular files"); that line becomes a
heading block of the entry's level, cut from the text around it, and the section path is the
entries' titles. An entry not found opens no section. Without an outline, one section.
"""
from __future__ import annotations

import io
import logging
import re
from collections import Counter

from windowrag_pg.parse import HeadingMark, ParseError, build_sections
from windowrag_pg.parse.types import Block, ParsedDocument

BLOCK_SEPARATOR = "\n\n"
# A line at least this share of the page's widest line is "full": the paragraph goes on.
_FULL_LINE_SHARE = 0.7
# a /Title a tool wrote, not a person
_TOOL_TITLE = re.compile(r"(?i)^(?:microsoft\s+\w+\s+-\s|untitled\b|title$|document\d*$)|\.(?:docx?|pdf|odt|rtf|"
                         r"txt|pptx?|xlsx?|indd|tex|dvi|ps|html?)$")
_OUTLIER_WIDTH = 1.2
_BULLETS = frozenset("•◦▪▫‣●○■□–—·")
# Running headers and footers: the first and last lines of a page, seen on this many pages (and
# this share of them) with only their numbers changed.
_RUNNING_MIN_PAGES = 3
_RUNNING_MIN_SHARE = 1 / 3
_EDGE_LINES = 2
_RUNNING_MAX_CHARS = 100
_PAGE_NUMBER = re.compile(r"(?i)^(?:page\s+)?[-–—(\[]?\s*(?:\d{1,5}|(?=[ivxlc])c{0,3}(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3}))"
                          r"\s*[-–—)\]]?(?:\s*(?:of|/)\s*\d{1,5})?$")
# a table of contents' or an index's entry: "Simple parsing . . . . . . 4", "threads .......... 32"
_DOT_LEADER = re.compile(r"(?:\.\s?){4,}\s*(?:\d{1,5}|[ivxlc]{1,7})(?:\s*,\s*\d{1,5})*$")
_END_NUMBERS = re.compile(r"^\d{1,5}(?=\s)|(?<=\s)\d{1,5}$")
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                            "\ufb05": "st", "\ufb06": "st"})
_SENTENCE_END = re.compile(r"[.!?:;][\"')\]”’]*$")
_FIRST_SENTENCE_END = re.compile(r"[.!?][\"')\]”’]*(?=\s|$)")


def parse_pdf_bytes(data: bytes, *, title: str | None = None) -> ParsedDocument:
    import pypdf  # imported here: only PDF ingestion pays for it

    # pypdf logs what it repairs ("invalid pdf header", "EOF marker not found") without naming
    # the file: a damaged file is reported once, by name, from the error below
    if b"%PDF-" not in bytes(data[:1024]):  # the header may follow a little junk, no more
        start = bytes(data[:40]).decode("utf-8", "replace").split("\n")[0].strip()
        raise ParseError("unreadable PDF: not a PDF file (no %PDF- header" +
                         (f"; it starts with {start!r})" if start else ": it is empty)"))
    pypdf_log = logging.getLogger("pypdf")
    level = pypdf_log.level
    pypdf_log.setLevel(logging.ERROR)
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ParseError("unreadable PDF: encrypted with a password")
        pages = list(reader.pages)
    except ParseError:
        raise
    except Exception as error:  # pypdf raises many types for damaged files
        raise ParseError(f"unreadable PDF: {type(error).__name__}: {error}") from None
    finally:
        pypdf_log.setLevel(level)

    page_lines: list[tuple[int, list[str]]] = []
    unreadable: list[str] = []
    empty: list[int] = []
    # pypdf logs a broken page ("Error -3 while decompressing data") without the file's name: its
    # messages are caught here and reported with the page, in the ingest's warnings
    caught = _Caught()
    propagate = pypdf_log.propagate
    pypdf_log.addHandler(caught)
    pypdf_log.setLevel(logging.WARNING)
    pypdf_log.propagate = False
    try:
        for page_number, page in enumerate(pages, start=1):
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
    finally:
        pypdf_log.removeHandler(caught)
        pypdf_log.setLevel(level)
        pypdf_log.propagate = propagate
    page_lines = [(page, [line for line in lines if not _DOT_LEADER.search(line)])
                  for page, lines in without_page_furniture(page_lines)]
    paged_blocks: list[tuple[int, str]] = []  # (page, text)
    for page_number, lines in page_lines:
        for number, block_text in enumerate(page_blocks(lines)):
            if number == 0 and paged_blocks and _continues(paged_blocks[-1][1], block_text):
                head, block_text = _split_after_first_sentence(block_text)
                paged_blocks[-1] = (paged_blocks[-1][0], _join_lines([paged_blocks[-1][1], head]))
                if not block_text:
                    continue
            paged_blocks.append((page_number, block_text))
    if not paged_blocks:
        raise ParseError(
            f"unreadable PDF: no extractable text in {len(pages)} page(s) (scanned images?)"
        )
    parts: list[str] = []
    items: list[Block | HeadingMark] = []
    length = 0
    for page_number, block_text, heading in with_outline_headings(paged_blocks, outline_entries(reader)):
        if parts:
            parts.append(BLOCK_SEPARATOR)
            length += len(BLOCK_SEPARATOR)
        parts.append(block_text)
        if heading is not None:
            items.append(HeadingMark(length, min(heading[0], 6), heading[1]))
        kind = "paragraph" if heading is None else "heading"
        items.append(Block(kind, length, length + len(block_text), page=page_number))
        length += len(block_text)
    text = "".join(parts)
    if title is None:
        title = _metadata_title(reader)
    warnings = unreadable + ([f"{_count_pages(empty)} without text (scanned images?) left out: "
                              f"{_page_list(empty)}"] if empty else [])
    return ParsedDocument(text=text, sections=build_sections(len(text), items), title=title, format="pdf",
                          warnings=warnings)


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


def with_outline_headings(blocks: list[tuple[int, str]], entries: list[tuple[int, str, int]]
                          ) -> list[tuple[int, str, tuple[int, str] | None]]:
    """BLOCKS (page, text) with each outline entry's printed line cut out as a block of its own,
    marked (level, title) (module docstring); the others marked None."""
    out: list[tuple[int, str, tuple[int, str] | None]] = [(page, text, None) for page, text in blocks]
    cursor = 0  # entries are found in order
    for level, title, page in entries:
        wanted = _heading_key(title)
        if not wanted:
            continue
        for index in range(cursor, len(out)):
            block_page, text, mark = out[index]
            if block_page > page:
                break
            if block_page < page or mark is not None:
                continue
            lines = text.split("\n")
            hit = next((i for i, line in enumerate(lines) if _is_heading_line(line, wanted)), None)
            if hit is None:
                continue
            before, after = "\n".join(lines[:hit]), "\n".join(lines[hit + 1:])
            pieces = [(before, None), (lines[hit], (level, title)), (after, None)]
            out[index:index + 1] = [(block_page, piece, piece_mark) for piece, piece_mark in pieces if piece]
            cursor = index + (1 if before else 0) + 1
            break
    return out


def _heading_key(title: str) -> str:
    """A title without its numbering ("2.13.", "A.1", "Appendix A"), letters and digits only."""
    title = re.sub(r"^(?:(?:appendix|chapter|section)\s+)?(?:[A-Z]|\d+)(?:\.\d+)*\.?\s+", "", title.strip(),
                   flags=re.IGNORECASE)
    return re.sub(r"[^a-z0-9]", "", title.lower())


def _is_heading_line(line: str, wanted: str) -> bool:
    key = re.sub(r"[^a-z0-9]", "", line.lower())
    return key.endswith(wanted) and len(key) <= len(wanted) + 12


def page_blocks(lines: list[str]) -> list[str]:
    """Group a page's (stripped) lines into blocks: a block ends after a short line or at a blank line.

    "Short" is against the page's full width: its widest line, unless that is an outlier (over
    1.2 times the second widest, one in 20 on a long page): one wider line (a title across two
    columns, a command in a smaller font) would make every ordinary line short and cut each
    sentence at its line ends; such a line is a block of its own. A line that opens with a bullet
    starts a block."""
    lengths = sorted((len(line) for line in lines if line), reverse=True)
    width = lengths[0] if lengths else 0
    if len(lengths) > 1:
        typical = lengths[min(len(lengths) - 1, max(1, len(lengths) // 20))]
        width = typical if width > _OUTLIER_WIDTH * typical else width
    blocks: list[str] = []
    current: list[str] = []
    for line in lines:
        outlier = len(line) > _OUTLIER_WIDTH * width  # a block of its own
        if not line or (current and (line[0] in _BULLETS or outlier)):
            if current:
                blocks.append(_join_lines(current))
                current = []
            if not line:
                continue
        current.append(line)
        if outlier:
            blocks.append(_join_lines(current))
            current = []
            continue
        if len(line) < _FULL_LINE_SHARE * width:
            blocks.append(_join_lines(current))
            current = []
    if current:
        blocks.append(_join_lines(current))
    return blocks


def without_page_furniture(pages: list[tuple[int, list[str]]]) -> list[tuple[int, list[str]]]:
    """PAGES' lines without page numbers and running headers and footers (module docstring)."""
    def edges(lines: list[str]) -> list[int]:  # indexes of the first and last lines with text
        filled = [i for i, line in enumerate(lines) if line]
        return sorted(set(filled[:_EDGE_LINES] + filled[-_EDGE_LINES:]))

    def shape(line: str) -> str:
        return re.sub(r"\d+", "#", " ".join(line.lower().split()))

    def end_numbers(line: str) -> set[int]:  # "Chapter 4: Function reference 9", "12 Introduction"
        return {int(n) for n in _END_NUMBERS.findall(line)} if len(line) <= _RUNNING_MAX_CHARS else set()

    least = max(_RUNNING_MIN_PAGES, _RUNNING_MIN_SHARE * len(pages))
    seen = Counter(key for _, lines in pages for key in {shape(lines[i]) for i in edges(lines)})
    # printed page numbers run at a fixed offset from the physical ones (front matter, a cover)
    offsets = Counter(offset for page, lines in pages
                      for offset in {page - n for i in edges(lines) for n in end_numbers(lines[i])})
    offset, count = offsets.most_common(1)[0] if offsets else (None, 0)
    result = []
    for page, lines in pages:
        numbers = {i for i in edges(lines) if _PAGE_NUMBER.match(lines[i])}
        drop = numbers | {i for i in edges(lines) if len(pages) >= _RUNNING_MIN_PAGES and seen[shape(lines[i])] >= least}
        if not numbers and count >= least:  # a page printing its number alone has no other ("1 Introduction")
            drop |= {i for i in edges(lines) if page - offset in end_numbers(lines[i])}
        result.append((page, [line for i, line in enumerate(lines) if i not in drop]))
    return result


def _join_lines(lines: list[str]) -> str:
    """Lines of one block joined by "\n"; a word hyphenated at a line end ("exam-" + "ination",
    lower case on both sides) joined whole."""
    text = lines[0]
    for line in lines[1:]:
        if len(text) > 1 and text[-1] == "-" and text[-2].islower() and line[:1].islower():
            text = text[:-1] + line
        else:
            text = f"{text}\n{line}"
    return text


def _continues(previous: str, block: str) -> bool:
    """Does BLOCK, the first of a page, go on with the sentence PREVIOUS (the last block before)
    leaves open?"""
    return not _SENTENCE_END.search(previous) and block[:1].islower()


def _split_after_first_sentence(block: str) -> tuple[str, str]:
    """BLOCK cut after its first sentence end: (head, the rest without its leading space)."""
    end = _FIRST_SENTENCE_END.search(block)
    if end is None:
        return block, ""
    return block[:end.end()], block[end.end():].lstrip()


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
    if _TOOL_TITLE.search(title) or not re.search(r"[^\W\d_]{2,}", title):
        return None
    return title or None
