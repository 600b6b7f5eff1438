"""Contextual headers: what is embedded for a unit is "title › section path: unit", not the unit alone.

A sentence alone often lacks its subject ("It was later called the first oil shock"); the
document's title and the headings above the sentence supply it. Only the embedding sees the
header: the stored text, BM25 and the citations are the unit's own. On squad-dev (1,000
questions, the same budget pipeline) the header lifted hit@5 at 700 tokens from 0.949 to 0.965
(docs/evaluation.md); file names as titles cost the contracts a point, hence ``header_title``.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

HEADER_SEPARATOR = " › "
# A header is written before every unit of its section and the model reads 512 tokens: a title or
# heading is cut to MAX_HEADER_PART_CHARS and a header to about MAX_HEADER_CHARS (found by a
# tester: a 230 KB heading over 2,000 sentences took 3.4 GB and 7 minutes to embed, and left no
# room for the sentence in what the model reads).
MAX_HEADER_PART_CHARS = 200
MAX_HEADER_CHARS = 600
# What gives a title away as a file name: an extension, URL escapes ("Mutual%20NDA"), or one
# "word" joined by underscores or holding digits ("3511_standard_nda", "CNDA1218Draft3").
_FILE_EXTENSION_RE = re.compile(r"\.[A-Za-z][A-Za-z0-9]{1,4}\Z")
_URL_ESCAPE_RE = re.compile(r"%[0-9A-Fa-f]{2}")
_JOINED_RE = re.compile(r"[_\d]")
# A word of two letters or more: what a title needs to name something.
_WORD_RE = re.compile(r"[^\W\d_]{2,}")


def header_title(title: str | None) -> str | None:
    """TITLE as a header, or None when it is a file name or names nothing.

    File names are often opaque ids ("09-24-2019-04-25-05-3914910473.pdf", "3511_standard_nda"):
    the 61 ContractNLI titles are such names, and put before every sentence they cost the contracts
    a point of evidence recall. A title someone wrote ("Super Bowl 50", "Victoria (Australia)",
    a Markdown page's H1) is kept, whitespace collapsed.
    """
    if not title:
        return None
    title = " ".join(title.split())
    if _FILE_EXTENSION_RE.search(title) or _URL_ESCAPE_RE.search(title):
        return None
    if " " not in title and _JOINED_RE.search(title):
        return None
    return title if _WORD_RE.search(title) else None


def contextual_header(title: str | None, heading_path: Sequence[str]) -> str:
    """"title › heading › subheading" ("" when there is nothing to say).

    A heading equal to the one before it is left out: a Markdown page's H1 is usually its title.
    Long ones are cut (MAX_HEADER_PART_CHARS, MAX_HEADER_CHARS).
    """
    parts: list[str] = []
    for part in (header_title(title), *heading_path):
        part = " ".join(part.split()) if part else ""
        if part and (not parts or part.casefold() != parts[-1].casefold()):
            parts.append(part if len(part) <= MAX_HEADER_PART_CHARS else part[:MAX_HEADER_PART_CHARS - 1] + "…")
    # too long: the first part (the title, or the top heading) and the nearest headings that fit
    while len(parts) > 2 and len(HEADER_SEPARATOR.join(parts)) > MAX_HEADER_CHARS:
        del parts[1]
    return HEADER_SEPARATOR.join(parts)


def embedding_text(text: str, *, title: str | None, heading_path: Sequence[str]) -> str:
    """TEXT with its contextual header: "title › section path: text" (TEXT alone without one)."""
    header = contextual_header(title, heading_path)
    return f"{header}: {text}" if header else text
