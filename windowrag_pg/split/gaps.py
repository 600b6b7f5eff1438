"""The text between consecutive units of a document (whitespace, Markdown markup, headings a
unit does not hold): stored with each sentence so that a run of sentences can be given back as
the document's own characters without reading the whole document (windowrag.search_windows)."""
from __future__ import annotations

from collections.abc import Sequence

from windowrag_pg.parse.types import Unit


def unit_gaps(text: str, units: Sequence[Unit]) -> list[str | None]:
    """For each unit, the characters from its end to the next unit's start ('' after the last
    unit: nothing follows it in a window). None where the next unit starts before this one ends
    (the splitter never does this; the reader then falls back to the document's text)."""
    gaps: list[str | None] = []
    for unit, following in zip(units, units[1:]):
        gaps.append(text[unit.end_char:following.start_char] if following.start_char >= unit.end_char else None)
    if units:
        gaps.append("")
    return gaps
