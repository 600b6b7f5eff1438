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
    """One block per run of non-blank lines, stripped."""
    blocks = []
    position = 0
    for separator in _PARAGRAPH_BREAK_RE.finditer(text):
        blocks.extend(_stripped_block(text, position, separator.start()))
        position = separator.end()
    blocks.extend(_stripped_block(text, position, len(text)))
    return blocks


def looks_hard_wrapped(text: str) -> bool:
    """True for prose wrapped at a fixed width: paragraphs of several lines that fill the width.

    Signals, all required: there are blank-line paragraph breaks; no line is longer than a
    terminal width; the longest line is wide enough to be a wrap width (not a list of words);
    most lines continue into the next line; and those non-final lines nearly fill the width.
    """
    if "\n" not in text or _PARAGRAPH_BREAK_RE.search(text) is None:
        return False
    lines = [line.rstrip() for line in text.split("\n")]
    widths = [len(line) for line in lines if line.strip()]
    if len(widths) < _WRAP_MIN_LINES:
        return False
    width = max(widths)
    if not _WRAP_MIN_WIDTH <= width <= _WRAP_MAX_WIDTH:
        return False
    continued = [
        len(line)
        for line, following in zip(lines, lines[1:])
        if line.strip() and following.strip()
    ]
    if len(continued) * 2 < len(widths):
        return False
    filled = sum(1 for length in continued if length >= 0.6 * width)
    return filled >= 0.8 * len(continued)


def _stripped_block(text: str, start: int, end: int) -> list[Block]:
    segment = text[start:end]
    stripped = segment.strip()
    if not stripped:
        return []
    start += len(segment) - len(segment.lstrip())
    return [Block("paragraph", start, start + len(stripped))]
