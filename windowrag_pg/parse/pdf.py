"""PDF bytes -> one section of paragraph blocks, with pypdf's text extraction.

PDF has no usable offsets of its own, so the stored ``ParsedDocument.text`` is built here:
the text of each page's blocks, lines inside a block joined by "\\n", blocks (and pages) joined
by a blank line ("\\n\\n"). Each block carries its 1-based page number. Pages without text are
skipped (their number is not reused).

pypdf returns one line per printed line and no paragraph breaks. A printed paragraph fills the
line width except on its last line, so a block runs over "full" lines and ends at a short line
(last line of a paragraph, heading, list item) or a blank line. That keeps sentences that wrap
across lines whole without gluing a heading to the paragraph after it.

One section for the whole document: the outline (bookmarks) is not used.
"""
from __future__ import annotations

import io
import logging

from windowrag_pg.parse import ParseError, build_sections
from windowrag_pg.parse.types import Block, ParsedDocument

BLOCK_SEPARATOR = "\n\n"
# A line at least this share of the page's widest line is "full": the paragraph goes on.
_FULL_LINE_SHARE = 0.7


def parse_pdf_bytes(data: bytes, *, title: str | None = None) -> ParsedDocument:
    import pypdf  # imported here: only PDF ingestion pays for it

    # pypdf logs what it repairs ("invalid pdf header", "EOF marker not found") without naming
    # the file: a damaged file is reported once, by name, from the error below
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

    parts: list[str] = []
    blocks: list[Block] = []
    length = 0
    for page_number, page in enumerate(pages, start=1):
        try:
            page_text = page.extract_text() or ""
        except Exception:  # one broken page (bad font, bad stream) should not lose the others
            continue
        for block_text in page_blocks(_clean(page_text)):
            if parts:
                parts.append(BLOCK_SEPARATOR)
                length += len(BLOCK_SEPARATOR)
            parts.append(block_text)
            blocks.append(Block("paragraph", length, length + len(block_text), page=page_number))
            length += len(block_text)
    if not blocks:
        raise ParseError(
            f"unreadable PDF: no extractable text in {len(pages)} page(s) (scanned images?)"
        )
    text = "".join(parts)
    if title is None:
        title = _metadata_title(reader)
    return ParsedDocument(
        text=text, sections=build_sections(len(text), list(blocks)), title=title, format="pdf"
    )


def page_blocks(page_text: str) -> list[str]:
    """Group a page's lines into blocks: a block ends after a short line or at a blank line."""
    lines = [line.strip() for line in page_text.split("\n")]
    width = max((len(line) for line in lines), default=0)
    blocks: list[str] = []
    current: list[str] = []
    for line in lines:
        if not line:
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
        if len(line) < _FULL_LINE_SHARE * width:
            blocks.append("\n".join(current))
            current = []
    if current:
        blocks.append("\n".join(current))
    return blocks


def _clean(page_text: str) -> str:
    """Normalise line breaks; drop what Postgres text cannot hold (NUL, lone surrogates)."""
    page_text = page_text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    return page_text.encode("utf-8", "replace").decode("utf-8")


def _metadata_title(reader) -> str | None:
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception:
        return None
    if not isinstance(title, str):
        return None
    return " ".join(title.split()) or None
