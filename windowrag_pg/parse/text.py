"""Plain text -> one section of paragraph blocks. ``ParsedDocument.text`` is the input unchanged.

Blocks: each non-blank line is a block (stripped of surrounding whitespace). That fits text with
one paragraph per line (SQuAD) and text with one clause or list item per line (ContractNLI,
text extracted from PDFs): a line break there ends a unit even without a full stop, which the
sentence splitter alone would not see (it joins lines into one sentence).

The exception is hard-wrapped prose (e-mails, RFCs, books: lines cut at a fixed width, paragraphs
separated by blank lines). There a line break is not a boundary, so a block is a run of non-blank
lines and the sentence splitter finds the sentences across the line breaks.
"""
from __future__ import annotations

import re

from windowrag_pg.parse import build_sections
from windowrag_pg.parse.types import Block, ParsedDocument

# A stripped line: starts at a non-space character, runs to the end of its line.
_LINE_RE = re.compile(r"\S[^\r\n]*")
# One or more blank (whitespace-only) lines between paragraphs.
_PARAGRAPH_BREAK_RE = re.compile(r"\n[^\S\n]*\n\s*")

# Hard-wrap detection thresholds (see ``looks_hard_wrapped``).
_WRAP_MIN_WIDTH = 50
_WRAP_MAX_WIDTH = 100
_WRAP_MIN_LINES = 4
# A line at least this share of the wrap width fills it (the paragraph goes on).
_WRAP_FILL = 0.6
# Lines longer than the widest wrap (a URL, a table row) tolerated in wrapped text: this many, or
# this share of the lines.
_WRAP_LONG_LINES = 2
_WRAP_LONG_LINE_SHARE = 0.02
# A line that opens a bulleted list item, or (with an enumerator: "1.", "2)", "(a)", "iv.") maybe a
# numbered one.
_BULLET_RE = re.compile(r"[^\S\n]*[-*+•][^\S\n]+\S")
# A line that underlines the one above it (a plain-text heading).
_UNDERLINE_RE = re.compile(r"([-=~*^#])\1{2,}")
_ENUMERATED_RE = re.compile(r"[^\S\n]*\(?(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,5})[.)][^\S\n]+\S")


def parse_text(text: str, *, title: str | None = None) -> ParsedDocument:
    width = hard_wrap_width(text)
    blocks = paragraph_blocks(text, width) if width is not None else line_blocks(text)
    sections = build_sections(len(text), list(blocks))
    return ParsedDocument(text=text, sections=sections, title=title, format="text")


def line_blocks(text: str, start: int = 0, end: int | None = None) -> list[Block]:
    """One block per non-blank line of ``text[start:end]``, stripped."""
    blocks = []
    for match in _LINE_RE.finditer(text, start, len(text) if end is None else end):
        blocks.append(Block("paragraph", match.start(), match.start() + len(match.group().rstrip())))
    return blocks


def paragraph_blocks(text: str, width: int) -> list[Block]:
    """One block per run of non-blank lines (a paragraph), stripped; a wrapped list's items are
    blocks of their own (``_item_blocks``), and so is each line of a paragraph none of whose lines
    fills the wrap ``width`` (an e-mail's header lines, a greeting, a signature)."""
    blocks = []
    position = 0
    for separator in [*_PARAGRAPH_BREAK_RE.finditer(text), None]:
        end = separator.start() if separator is not None else len(text)
        if _is_prose(text[position:end].split("\n"), width):
            blocks.extend(_item_blocks(text, position, end, width))
        else:
            blocks.extend(line_blocks(text, position, end))
        if separator is not None:
            position = separator.end()
    return blocks


def looks_hard_wrapped(text: str) -> bool:
    """True for prose wrapped at a fixed width (``hard_wrap_width``)."""
    return hard_wrap_width(text) is not None


def hard_wrap_width(text: str) -> int | None:
    """The wrap width of prose wrapped at a fixed width: paragraphs of several lines that fill
    the width. None for other text.

    Signals, all required: there are blank-line paragraph breaks; the longest line (leaving out
    a few that run past a terminal's width: a URL, a table) is wide enough to be a wrap width (not
    a list of words); in the paragraphs of prose (those with a line that fills 60% of the width:
    not a block of header lines, a greeting or a signature), most lines continue into the next
    line and those non-final lines nearly fill the width, bullet items and the line before one
    aside, numbered ones too, and a line over a deeper-indented one (a short item, the line that
    introduces a list, a man page's option or heading over its description: no sign that the
    prose around them is not wrapped).
    """
    if "\n" not in text or _PARAGRAPH_BREAK_RE.search(text) is None:
        return None
    paragraphs = [
        [line.rstrip() for line in paragraph.split("\n") if line.strip()]
        for paragraph in _PARAGRAPH_BREAK_RE.split(text)
    ]
    widths = [len(line) for paragraph in paragraphs for line in paragraph]
    if len(widths) < _WRAP_MIN_LINES:
        return None
    long_lines = sum(1 for w in widths if w > _WRAP_MAX_WIDTH)
    if long_lines > max(_WRAP_LONG_LINES, _WRAP_LONG_LINE_SHARE * len(widths)):
        return None
    width = max((w for w in widths if w <= _WRAP_MAX_WIDTH), default=0)
    if width < _WRAP_MIN_WIDTH:
        return None
    prose = [paragraph for paragraph in paragraphs if _is_prose(paragraph, width)]
    prose_lines = sum(1 for paragraph in prose for line in paragraph if len(line) <= _WRAP_MAX_WIDTH)
    continued = [
        (line, following)
        for paragraph in prose
        for line, following in zip(paragraph, paragraph[1:])
        if len(line) <= _WRAP_MAX_WIDTH
    ]
    if not continued or len(continued) * 2 < prose_lines:
        return None
    filled = sum(
        1 for line, following in continued
        if len(line) >= _WRAP_FILL * width or _is_list_line(line) or _is_list_line(following)
        or _indent(following) > _indent(line)
    )
    return width if filled >= 0.8 * len(continued) else None


def _is_prose(lines: list[str], width: int) -> bool:
    """Whether one of the lines fills the wrap width (the paragraph is not only short lines)."""
    return any(_WRAP_FILL * width <= len(line.rstrip()) for line in lines)


def _indent(line: str) -> int:
    """The column where a line's text starts, after a list marker ("- ", "12. "): a wrapped item's
    next line starts there. Tabs count to the next multiple of 8 (man pages rendered to text keep
    them: `man tar | col -b`)."""
    expanded = line.expandtabs()
    marker = _BULLET_RE.match(expanded) or _ENUMERATED_RE.match(expanded)
    return marker.end() - 1 if marker else len(expanded) - len(expanded.lstrip())


def _is_list_line(line: str) -> bool:
    return _BULLET_RE.match(line) is not None or _ENUMERATED_RE.match(line) is not None


def _item_blocks(text: str, start: int, end: int, width: int) -> list[Block]:
    """The stripped block of ``text[start:end]``, cut before each list item line: a bullet ("- ",
    "* ", "• "), or an enumerator ("1. ", "(a) ") after a line that ends with ":" or ";" or does
    not fill the wrap width (a wrapped line may well start with "12. " or "R. R. Martin"); and
    after a line ended on purpose
    (``_broken_short``: a heading over its text, a list of short items, a man page's option
    name).
    A dash that starts a wrapped line ("this\n- and here is why -") is rarer than a bullet.
    """
    cuts = [start]
    lines = [(match.start(), text[text.rfind("\n", 0, match.start()) + 1:match.end()].rstrip())
             for match in _LINE_RE.finditer(text, start, end)]
    for number in range(1, len(lines)):
        previous_line, (line_start, line) = lines[number - 1][1], lines[number]
        after = lines[number + 1][1] if number + 1 < len(lines) else None
        if _broken_short(previous_line, line, after, width) or _BULLET_RE.match(line) or (
                (previous_line.endswith((":", ";")) or len(previous_line) < _WRAP_FILL * width)
                and _ENUMERATED_RE.match(line)):
            cuts.append(line_start)
    cuts.append(end)
    return [block for a, b in zip(cuts, cuts[1:]) for block in _stripped_block(text, a, b)]


def _broken_short(line: str, following: str, after: str | None, width: int) -> bool:
    """Whether a wrapped text's ``line`` was ended on purpose before ``following`` (``after`` is
    the line after that, if any in the paragraph): it does not fill the width, the next word would
    have fitted on it (not a line before a long path or address, which had to wrap), and the next
    line starts at another indent (a man page's option over its description, a heading over its
    indented text), underlines it, or is short too (a list of short items, an address).
    A short line alone within a paragraph of lines at one indent is left joined: filling tools
    that balance lines (fmt, par) end lines short mid-sentence."""
    columns = len(line)
    if columns >= _WRAP_FILL * width or columns + 1 + len(following.split(None, 1)[0]) > width:
        return False
    return (_indent(following) != _indent(line) or _UNDERLINE_RE.fullmatch(following.strip()) is not None
            or len(following) < _WRAP_FILL * width and (after is None or len(after) < _WRAP_FILL * width))


def _stripped_block(text: str, start: int, end: int) -> list[Block]:
    segment = text[start:end]
    stripped = segment.strip()
    if not stripped:
        return []
    start += len(segment) - len(segment.lstrip())
    return [Block("paragraph", start, start + len(stripped))]
