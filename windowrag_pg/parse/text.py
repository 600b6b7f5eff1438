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
# Lines longer than the widest wrap (a URL, a table row) tolerated in wrapped text: this many, or
# this share of the lines.
_WRAP_LONG_LINES = 2
_WRAP_LONG_LINE_SHARE = 0.02
# A line that opens a bulleted list item.
_BULLET_RE = re.compile(r"[^\S\n]*[-*+•][^\S\n]+\S")
_LINE_START_RE = re.compile(r"^", re.MULTILINE)


def parse_text(text: str, *, title: str | None = None) -> ParsedDocument:
    blocks = paragraph_blocks(text) if looks_hard_wrapped(text) else line_blocks(text)
    sections = build_sections(len(text), list(blocks))
    return ParsedDocument(text=text, sections=sections, title=title, format="text")


def line_blocks(text: str) -> list[Block]:
    """One block per non-blank line, stripped."""
    blocks = []
    for match in _LINE_RE.finditer(text):
        start, end = match.span()
        end = start + len(match.group().rstrip())
        blocks.append(Block("paragraph", start, end))
    return blocks


def paragraph_blocks(text: str) -> list[Block]:
    """One block per run of non-blank lines, stripped; a wrapped list's items are blocks of their
    own (``_item_blocks``)."""
    blocks = []
    position = 0
    for separator in _PARAGRAPH_BREAK_RE.finditer(text):
        blocks.extend(_item_blocks(text, position, separator.start()))
        position = separator.end()
    blocks.extend(_item_blocks(text, position, len(text)))
    return blocks


def looks_hard_wrapped(text: str) -> bool:
    """True for prose wrapped at a fixed width: paragraphs of several lines that fill the width.

    Signals, all required: there are blank-line paragraph breaks; the longest line (leaving out
    a few that run past a terminal's width: a URL, a table) is wide enough to be a wrap width (not
    a list of words); most lines continue into the next line; and those non-final lines nearly
    fill the width, bullet items and the line before one aside (a short item, or the line that
    introduces a list, is no sign that the prose around them is not wrapped).
    """
    if "\n" not in text or _PARAGRAPH_BREAK_RE.search(text) is None:
        return False
    lines = [line.rstrip() for line in text.split("\n")]
    widths = [len(line) for line in lines if line.strip()]
    if len(widths) < _WRAP_MIN_LINES:
        return False
    long_lines = sum(1 for w in widths if w > _WRAP_MAX_WIDTH)
    if long_lines > max(_WRAP_LONG_LINES, _WRAP_LONG_LINE_SHARE * len(widths)):
        return False
    width = max((w for w in widths if w <= _WRAP_MAX_WIDTH), default=0)
    if width < _WRAP_MIN_WIDTH:
        return False
    continued = [
        (line, following)
        for line, following in zip(lines, lines[1:])
        if line.strip() and following.strip() and len(line) <= _WRAP_MAX_WIDTH
    ]
    if len(continued) * 2 < len(widths) - long_lines:
        return False
    filled = sum(
        1 for line, following in continued
        if len(line) >= 0.6 * width or _BULLET_RE.match(line) or _BULLET_RE.match(following)
    )
    return filled >= 0.8 * len(continued)


def _item_blocks(text: str, start: int, end: int) -> list[Block]:
    """The stripped block of ``text[start:end]``, cut before each bullet line ("- ", "* ", "• ").

    Only bullets: a wrapped line may well start with "12. " or "R. R. Martin", and a dash
    that starts a wrapped line ("this\n- and here is why -") is rarer than a bulleted list.
    """
    cuts = [start]
    for line in _LINE_START_RE.finditer(text, start, end):
        if line.start() > start and _BULLET_RE.match(text, line.start(), end):
            cuts.append(line.start())
    cuts.append(end)
    return [block for a, b in zip(cuts, cuts[1:]) for block in _stripped_block(text, a, b)]


def _stripped_block(text: str, start: int, end: int) -> list[Block]:
    segment = text[start:end]
    stripped = segment.strip()
    if not stripped:
        return []
    start += len(segment) - len(segment.lstrip())
    return [Block("paragraph", start, start + len(stripped))]
