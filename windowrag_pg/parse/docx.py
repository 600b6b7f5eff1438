"""DOCX bytes -> sections of blocks, with python-docx.

Like HTML and PDF, a Word document has no character offsets of its own, so the stored
``ParsedDocument.text`` is built here: the text of each block, blocks joined by a blank line
("\\n\\n"). The body is read in order: a paragraph styled "Heading N" (or "Title") is a heading
of level N that opens a section; a list paragraph (a list style, or Word's numbering) is a list
item, written after "- " indented two spaces a nesting level; any other paragraph with text is a
paragraph; each table row is a table row, its cells joined by " | " (a merged cell once; a
nested table's cells are its cell's text). Line breaks inside a paragraph stay "\\n". A
paragraph's text is all of its runs', tracked insertions and content controls included (deleted
text is not), and content controls holding whole paragraphs or tables are read through. Left out:
page headers and footers (the same on every page), footnotes, comments, text boxes and pictures.
The title is the document's own (File > Properties), else its first "Title" paragraph.
"""
from __future__ import annotations

import io
import re

from windowrag_pg.parse import (
    MAX_DOCUMENT_BYTES_ENV, HeadingMark, ParseError, build_sections, max_document_bytes, require_blocks,
)
from windowrag_pg.parse.types import Block, ParsedDocument

BLOCK_SEPARATOR = "\n\n"
LIST_MARKER = "- "
ROW_CELL_SEPARATOR = " | "
# A DOCX whose parts inflate past this many times the document size limit is refused unread.
INFLATED_SIZE_FACTOR = 10
_HEADING_STYLE = re.compile(r"(?i)^heading\s*([1-9])$")
_LIST_STYLE = re.compile(r"(?i)^list\b")


def parse_docx_bytes(data: bytes, *, title: str | None = None) -> ParsedDocument:
    document = _open(data)
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    parts: list[str] = []
    items: list[Block | HeadingMark] = []
    length = 0
    first_title: str | None = None

    def add(kind: str, text: str, level: int | None = None, marker: str = "") -> None:
        nonlocal length
        text = text.strip().replace("\x00", "\ufffd")
        if not text:
            return
        if parts:
            parts.append(BLOCK_SEPARATOR)
            length += len(BLOCK_SEPARATOR)
        parts.append(marker)  # before the block, not in it (a list item's "- ")
        length += len(marker)
        if level is not None:
            items.append(HeadingMark(length, level, " ".join(text.split())))
        parts.append(text)
        items.append(Block(kind, length, length + len(text)))
        length += len(text)

    for element in _body_blocks(document.element.body):
        tag = _local(element)
        if tag == "p":
            paragraph = Paragraph(element, document)
            style = (paragraph.style.name if paragraph.style is not None else "") or ""
            heading = _HEADING_STYLE.match(style)
            text = _paragraph_text(element)
            if heading or style.lower() == "title":
                level = int(heading.group(1)) if heading else 1
                if not heading and first_title is None and text.strip():
                    first_title = " ".join(text.split())
                add("heading", text, min(level, 6))
            elif _LIST_STYLE.match(style) or element.pPr is not None and element.pPr.numPr is not None:
                # written as Markdown writes a list item, "- " indented two spaces a level: the
                # reader sees the list, and the search tells a nested item's parent by the indents
                add("list_item", text, marker="  " * _list_level(element, style) + LIST_MARKER)
            else:
                add("paragraph", text)
        elif tag == "tbl":
            for row in Table(element, document).rows:
                cells: list[str] = []
                for cell in row.cells:  # a merged cell comes back once per grid column it spans
                    text = " ".join(_cell_text(cell._tc).split())
                    if text and (not cells or cells[-1] != text):
                        cells.append(text)
                add("table_row", ROW_CELL_SEPARATOR.join(cells))
    text = "".join(parts)
    sections = require_blocks(build_sections(len(text), items), "docx")
    return ParsedDocument(text=text, sections=sections, format="docx",
                          title=title if title is not None else _core_title(document) or first_title)


# What a paragraph's text is not: deleted text (w:delText, inside w:del), field codes
# (w:instrText), text boxes and drawings (left out, module docstring), the fallback copy of
# alternate content (mc:Fallback repeats mc:Choice), footnote and comment references.
_NOT_PARAGRAPH_TEXT = {"del", "txbxContent", "drawing", "pict", "object", "Fallback", "instrText", "delText"}


def _local(element) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _body_blocks(container):
    """The paragraphs and tables of CONTAINER in order, read through content controls (w:sdt: a
    cover page, a contents block, a form's fields) and custom XML, which python-docx skips."""
    for element in container.iterchildren():
        tag = _local(element)
        if tag in ("p", "tbl"):
            yield element
        elif tag == "sdt":
            for content in element.iterchildren():
                if _local(content) == "sdtContent":
                    yield from _body_blocks(content)
        elif tag == "customXml":
            yield from _body_blocks(element)


def _paragraph_text(paragraph) -> str:
    """A paragraph's text in order: every run's, inside hyperlinks, tracked insertions (w:ins),
    content controls, fields and smart tags too (python-docx's Paragraph.text reads runs and
    hyperlinks only); tabs as a tab, breaks as a line break; deleted text and text boxes left out."""
    parts: list[str] = []
    stack = list(reversed(list(paragraph.iterchildren())))
    while stack:
        node = stack.pop()
        tag = _local(node)
        if tag in _NOT_PARAGRAPH_TEXT:
            continue
        if tag == "t":
            parts.append(node.text or "")
        elif tag in ("tab", "ptab"):
            parts.append("\t")
        elif tag in ("br", "cr"):
            parts.append("\n")
        elif tag == "noBreakHyphen":
            parts.append("-")
        elif tag != "pPr":
            stack.extend(reversed(list(node.iterchildren())))
    return "".join(parts)


def _cell_text(cell) -> str:
    """A table cell's text: its paragraphs and the rows of the tables nested in it."""
    texts = []
    for block in _body_blocks(cell):
        if _local(block) == "p":
            texts.append(_paragraph_text(block))
        else:
            for row in block.iterchildren():
                if _local(row) == "tr":
                    texts.extend(_cell_text(inner) for inner in row.iterchildren() if _local(inner) == "tc")
    return " ".join(texts)


def _list_level(element, style: str) -> int:
    """A list paragraph's nesting level from 0: Word's numbering level, else the style's number
    ("List Bullet 2" is level 1)."""
    numbering = element.pPr.numPr if element.pPr is not None else None
    if numbering is not None and numbering.ilvl is not None and numbering.ilvl.val is not None:
        return min(int(numbering.ilvl.val), 8)
    number = re.search(r"(\d+)\s*$", style)
    return min(max(int(number.group(1)) - 1, 0), 8) if number else 0


def _open(data: bytes):
    """A python-docx Document of DATA, or ParseError saying why not."""
    import docx  # imported here: only Word ingestion pays for it

    if not bytes(data[:4]).startswith(b"PK"):
        start = bytes(data[:40]).decode("utf-8", "replace").split("\n")[0].strip()
        raise ParseError("unreadable DOCX: not a Word document (a .docx is a zip archive" +
                         (f"; this starts with {start!r})" if start else ": this is empty)"))
    _check_inflated_size(data)
    try:
        return docx.Document(io.BytesIO(data))
    except Exception as error:  # python-docx raises many types for damaged or other zip files
        raise ParseError(f"unreadable DOCX: {type(error).__name__}: {error}") from None


def _check_inflated_size(data: bytes) -> None:
    """Refuse a DOCX whose parts inflate past a few times the document size limit before any is
    read (found by a tester: a 3 MB file whose document.xml inflates to 3 GB took 3 GB of memory,
    the part is read whole). XML markup is most of a part, so the bound is generous."""
    import zipfile

    try:
        inflated = sum(info.file_size for info in zipfile.ZipFile(io.BytesIO(data)).infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # python-docx says what is wrong with it
    limit = INFLATED_SIZE_FACTOR * max_document_bytes()
    if inflated > limit:
        raise ParseError(f"unreadable DOCX: its parts inflate to {inflated:,} bytes, over {limit:,} "
                         f"({INFLATED_SIZE_FACTOR} times the document limit; set {MAX_DOCUMENT_BYTES_ENV} to raise it)")


def _core_title(document) -> str | None:
    try:
        title = document.core_properties.title
    except Exception:
        return None
    title = " ".join((title or "").split())
    return title if re.search(r"[^\W\d_]", title) else None
