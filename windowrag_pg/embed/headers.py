"""Contextual headers: what is embedded for a unit is "title › section path: unit", not the unit alone.

A sentence alone often lacks its subject ("It was later called the first oil shock"); the
document's title and the headings above the sentence supply it. Only the embedding sees the
header: the stored text, BM25 and the citations are the unit's own. On squad-dev (1,000
questions, the same budget pipeline) the header lifted hit@5 at 700 tokens from 0.949 to 0.965
(docs/evaluation.md); a title that names nothing (a scanned contract's file name) cost the
contracts a point, hence ``header_title``.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

HEADER_SEPARATOR = " › "
# A file name's extension: "nda.pdf" → "nda" (only for a one-word title: "v. 2.0" stays).
_FILE_EXTENSION_RE = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,4}\Z")
# A word of two letters or more: what a title needs to name something.
_WORD_RE = re.compile(r"[^\W\d_]{2,}")


def header_title(title: str | None) -> str | None:
    """TITLE as a header, or None when it names nothing.

    Whitespace is collapsed; a one-word title loses a file extension; a title left without a word
    of two letters ("09-24-2019-04-25-05-3914910473.pdf", "IMG_0042.jpg" keeps "IMG_0042") is None.
    """
    if not title:
        return None
    title = " ".join(title.split())
    if " " not in title:
        title = _FILE_EXTENSION_RE.sub("", title)
    return title if _WORD_RE.search(title) else None


def contextual_header(title: str | None, heading_path: Sequence[str]) -> str:
    """"title › heading › subheading" ("" when there is nothing to say).

    A heading equal to the one before it is left out: a Markdown page's H1 is usually its title.
    """
    parts: list[str] = []
    for part in (header_title(title), *heading_path):
        part = " ".join(part.split()) if part else ""
        if part and (not parts or part.casefold() != parts[-1].casefold()):
            parts.append(part)
    return HEADER_SEPARATOR.join(parts)


def embedding_text(text: str, *, title: str | None, heading_path: Sequence[str]) -> str:
    """TEXT with its contextual header: "title › section path: text" (TEXT alone without one)."""
    header = contextual_header(title, heading_path)
    return f"{header}: {text}" if header else text
