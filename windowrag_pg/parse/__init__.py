"""Parsing: raw text, Markdown, HTML, PDF or Word bytes -> ``ParsedDocument`` (sections of blocks).

Pure functions, no database and no models. The only entry points other layers need:

- ``parse_document(text, format, title=None)`` for ``"text"``, ``"markdown"`` and ``"html"``;
- ``parse_pdf(data, title=None)`` for PDF bytes, ``parse_docx(data, title=None)`` for Word (.docx);
- ``detect_format(path)`` to pick a format from a file suffix;
- ``decode_text(data, name)`` to turn file bytes into text, refusing invalid UTF-8 and binary junk.

Every problem with the input raises ``ParseError`` (a ``ValueError``) whose message names it.
A change here (or in split/) that may cut the same text into other sections or units must bump
``windowrag_pg.ingest.UNITS_VERSION``, so that stored documents are parsed again on their next
ingest.

Which text is stored: for ``"text"`` and ``"markdown"`` ``ParsedDocument.text`` is the input,
unchanged, so that offsets computed elsewhere (evaluation gold spans) point into it. HTML, PDF and
Word have no usable source offsets, so their parsers build a plain text from the blocks they
extract (see ``html.py``, ``pdf.py``, ``docx.py``) and all offsets point into that built text.
"""
from __future__ import annotations

import codecs
import os
import re
from dataclasses import dataclass
from pathlib import PurePath

from windowrag_pg.parse.types import Block, ParsedDocument, Section, Unit

__all__ = [
    "Block",
    "DEFAULT_MAX_DOCUMENT_BYTES",
    "HTML_BLOCK_TAGS",
    "HTML_DROPPED_TAGS",
    "HeadingMark",
    "MAX_DOCUMENT_BYTES_ENV",
    "ParsedDocument",
    "ParseError",
    "Section",
    "TEXT_FORMATS",
    "Unit",
    "decode_text",
    "detect_format",
    "has_visible_text",
    "max_document_bytes",
    "parse_document",
    "parse_docx",
    "parse_pdf",
]

TEXT_FORMATS = ("text", "markdown", "html")

# HTML elements whose content is not text (html.py, and raw HTML inside Markdown).
HTML_DROPPED_TAGS = frozenset(
    {"script", "style", "nav", "noscript", "template", "svg", "iframe", "object", "title"}
)
# HTML tags that end the running text: whatever inline text came before is a block of its own.
HTML_BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details",
        "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
        "header", "hr", "html", "li", "main", "ol", "p", "section", "summary", "table",
        "tbody", "td", "tfoot", "th", "thead", "ul",
    }
)

FORMAT_BY_SUFFIX = {
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".jsonl": "jsonl",
}

# Control characters that real text files contain; any other C0 control (or DEL) counts as junk.
_JUNK_CONTROL_RE = re.compile(r"[\x01-\x08\x0e-\x1a\x1c-\x1f\x7f]")
# A text file with more than this share of junk control characters is taken for binary data.
_MAX_JUNK_CONTROL_SHARE = 0.02
# Characters that show nothing: Unicode format characters (category Cf: zero-width spaces and
# joiners, bidirectional marks and overrides, BOM, soft hyphen, tag characters) and variation
# selectors. A document made only of these and whitespace is empty.
_INVISIBLE = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufe00-\ufe0f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef"
)
_VISIBLE_RE = re.compile(f"[^\\s{_INVISIBLE}]")

# Documents larger than this (UTF-8 bytes of the text, or bytes of a file or PDF) are refused:
# 20 MB of text is ~250,000 sentences, hours of embedding on a CPU. Parsing and splitting scale
# linearly (50 MB: ~20 s for text, ~30 s for Markdown), embedding is what makes it unreasonable.
DEFAULT_MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
MAX_DOCUMENT_BYTES_ENV = "WINDOWRAG_MAX_DOCUMENT_BYTES"


class ParseError(ValueError):
    """The input cannot be turned into a document; the message says why."""


def detect_format(path: str | PurePath) -> str:
    """The format name for a file path, from its suffix (case-insensitive)."""
    suffix = PurePath(path).suffix.lower()
    try:
        return FORMAT_BY_SUFFIX[suffix]
    except KeyError:
        known = ", ".join(sorted(FORMAT_BY_SUFFIX))
        shown = repr(suffix) if suffix else "none"
        raise ParseError(
            f"cannot tell the format of {str(path)!r}: unknown suffix {shown} (known: {known})"
        ) from None


def max_document_bytes() -> int:
    """The largest document accepted, in bytes: $WINDOWRAG_MAX_DOCUMENT_BYTES or 20 MiB."""
    raw = os.environ.get(MAX_DOCUMENT_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_DOCUMENT_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ParseError(f"{MAX_DOCUMENT_BYTES_ENV}={raw!r} is not a positive whole number of bytes")
    return value


def has_visible_text(text: str) -> bool:
    """True when ``text`` holds a character other than whitespace and invisible format characters."""
    return _VISIBLE_RE.search(text) is not None


def check_document_size(size: int, what: str = "document") -> None:
    """Refuse a document of ``size`` bytes when it exceeds ``max_document_bytes()``."""
    limit = max_document_bytes()
    if size > limit:
        raise ParseError(
            f"{what} is too large: {size:,} bytes, the limit is {limit:,} bytes "
            f"(set {MAX_DOCUMENT_BYTES_ENV} to raise it)"
        )


def decode_text(data: bytes, name: str, *, html: bool = False) -> str:
    """Decode file bytes as text; refuse invalid text and binary junk.

    UTF-8 (a leading BOM is dropped), or UTF-16 after its BOM (Windows Notepad's "Unicode"). An
    HTML file that is not valid UTF-8 is decoded in the charset it declares in its first 1,024
    bytes (``<meta charset>``, ``http-equiv`` Content-Type or an XML declaration), as browsers
    read it: older pages are often windows-1252 or Latin-1.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return _checked_text(data.decode("utf-16"), name)
        except UnicodeDecodeError as error:
            raise ParseError(f"{name}: invalid UTF-16 after its byte order mark at byte offset {error.start} "
                             f"({error.reason})") from None
    nul_at = data.find(b"\x00")
    if nul_at >= 0:
        # Checked before decoding: UTF-16 text without a BOM and binaries both show up as NUL bytes.
        raise ParseError(f"{name}: looks binary (NUL byte at byte offset {nul_at})")
    try:
        return _checked_text(data.decode("utf-8-sig"), name)
    except UnicodeDecodeError as error:
        utf8_error = error
    charset = declared_charset(data) if html else None
    if charset is None or python_codec(charset) in (None, "utf-8"):
        shown = f" (it declares charset {charset!r})" if charset and python_codec(charset) is None else ""
        raise ParseError(
            f"{name}: invalid UTF-8 at byte offset {utf8_error.start} ({utf8_error.reason}){shown}"
        )
    try:
        return _checked_text(data.decode(python_codec(charset)), name)
    except UnicodeDecodeError as error:
        raise ParseError(
            f"{name}: neither UTF-8 (byte offset {utf8_error.start}) nor its declared charset {charset!r} "
            f"(byte offset {error.start}: {error.reason})"
        ) from None


def _checked_text(text: str, name: str) -> str:
    if text:
        junk = len(_JUNK_CONTROL_RE.findall(text))
        if junk / len(text) > _MAX_JUNK_CONTROL_SHARE:
            raise ParseError(
                f"{name}: looks binary ({junk} control characters in {len(text)} characters)"
            )
    return text


# A charset declared near the start of an HTML file: <meta charset="...">, <meta
# http-equiv="Content-Type" content="text/html; charset=...">, <?xml ... encoding="..."?>.
_DECLARED_CHARSET_RE = re.compile(
    rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)|<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:-]+)""",
    re.IGNORECASE,
)
# WHATWG's Encoding Standard reads these labels as windows-1252 (so do browsers): pages labelled
# Latin-1 or ASCII hold its curly quotes and dashes (0x80-0x9F) more often than C1 controls.
_WINDOWS_1252_LABELS = frozenset({"iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "ascii", "us-ascii",
                                   "windows-1252", "cp1252", "x-cp1252", "iso_8859-1", "cp819", "ibm819"})


def declared_charset(data: bytes) -> str | None:
    """The charset an HTML file declares in its first 1,024 bytes (as browsers prescan), or None."""
    found = _DECLARED_CHARSET_RE.search(data[:1024])
    if found is None:
        return None
    return (found.group(1) or found.group(2)).decode("ascii").lower()


def python_codec(charset: str) -> str | None:
    """Python's codec for an HTML charset label, or None when Python has none."""
    if charset in _WINDOWS_1252_LABELS:
        return "cp1252"
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return None


def check_text(text: object) -> str:
    """Refuse text that cannot make a document or cannot be stored in Postgres."""
    if not isinstance(text, str):
        raise ParseError(f"document text must be str, not {type(text).__name__}")
    if not text:
        raise ParseError("empty document: the text has no characters")
    if text.isspace():
        raise ParseError("empty document: the text contains only whitespace")
    # Characters are at most 4 UTF-8 bytes: count bytes only when the limit could be reached.
    if len(text) * 4 > max_document_bytes():
        check_document_size(len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass")))
    if not has_visible_text(text):
        raise ParseError(
            "empty document: the text contains only whitespace and invisible characters "
            "(zero-width spaces, joiners, direction marks)"
        )
    nul_at = text.find("\x00")
    if nul_at >= 0:
        raise ParseError(
            f"document contains a NUL character at offset {nul_at} (Postgres text cannot store it)"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ParseError(
            f"document contains a lone surrogate at offset {error.start} (not valid Unicode text)"
        ) from None
    return text


@dataclass(frozen=True, slots=True)
class HeadingMark:
    """Where a heading opens a section (used by the parsers to build sections from blocks)."""

    start_char: int  # where the new section starts (the heading's first character or line)
    level: int  # 1..6
    title: str  # plain text for the heading path


def build_sections(text_length: int, items: list[Block | HeadingMark]) -> list[Section]:
    """Sections from blocks and heading marks in document order.

    Sections tile ``[0, text_length)``: each one ends where the next starts. A heading's path is
    the stack of open headings of lower level plus itself. The part before the first heading is a
    level-0 section with an empty path, kept only if it holds blocks (otherwise the first heading's
    section starts at 0 so that the text stays covered).
    """
    sections = [Section(ordinal=0, heading_path=(), level=0, start_char=0, end_char=text_length)]
    open_headings: list[tuple[int, str]] = []
    for item in items:
        current = sections[-1]
        if isinstance(item, Block):
            current.blocks.append(item)
            continue
        while open_headings and open_headings[-1][0] >= item.level:
            open_headings.pop()
        open_headings.append((item.level, item.title))
        path = tuple(title for _, title in open_headings)
        if current.level == 0 and not current.blocks:
            current.heading_path, current.level = path, item.level
            continue
        # Never start before what the current section already holds (keeps sections ordered).
        last_end = current.blocks[-1].end_char if current.blocks else current.start_char
        start = max(item.start_char, last_end)
        current.end_char = start
        sections.append(
            Section(
                ordinal=len(sections),
                heading_path=path,
                level=item.level,
                start_char=start,
                end_char=text_length,
            )
        )
    return sections


def require_blocks(sections: list[Section], format: str) -> list[Section]:
    """Refuse a document in which the parser found nothing to index."""
    if not any(section.blocks for section in sections):
        raise ParseError(f"no text content found in the {format} document")
    return sections


def parse_document(text: str, format: str, *, title: str | None = None) -> ParsedDocument:
    """Parse ``text`` given as ``format`` ("text", "markdown" or "html") into sections of blocks."""
    if format not in TEXT_FORMATS:
        hint = {"pdf": " (use parse_pdf for PDF bytes)", "docx": " (use parse_docx for Word bytes)"}.get(format, "")
        raise ParseError(
            f"unknown format {format!r}: expected one of {', '.join(TEXT_FORMATS)}{hint}"
        )
    check_text(text)
    # Imported here so that importing the package stays cheap and free of cycles.
    if format == "text":
        from windowrag_pg.parse.text import parse_text

        return parse_text(text, title=title)
    if format == "markdown":
        from windowrag_pg.parse.markdown import parse_markdown

        return parse_markdown(text, title=title)
    from windowrag_pg.parse.html import parse_html

    return parse_html(text, title=title)


def parse_pdf(data: bytes, *, title: str | None = None) -> ParsedDocument:
    """Parse PDF bytes; raises ParseError("unreadable PDF: ...") when no text can be extracted."""
    from windowrag_pg.parse.pdf import parse_pdf_bytes

    if isinstance(data, (bytes, bytearray, memoryview)):
        check_document_size(len(data), "PDF")
    return parse_pdf_bytes(data, title=title)


def parse_docx(data: bytes, *, title: str | None = None) -> ParsedDocument:
    """Parse Word (.docx) bytes; raises ParseError("unreadable DOCX: ...") when they cannot be read."""
    from windowrag_pg.parse.docx import parse_docx_bytes

    if isinstance(data, (bytes, bytearray, memoryview)):
        check_document_size(len(data), "DOCX")
    return parse_docx_bytes(data, title=title)
