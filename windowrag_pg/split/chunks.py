"""Fixed-size token chunks: the naive baseline of the evaluation. Pure: no I/O.

What LlamaIndex's ``TokenTextSplitter`` / Haystack's ``DocumentSplitter(split_by="token")`` do
with no overlap: the whole document text is cut into consecutive windows of ``max_tokens``
tokens of the embedding tokenizer, ignoring its structure (a chunk may cross paragraphs and
sections - that is the baseline's nature). A chunk is stored under the section holding its
first character.

Two details keep the chunks exact and within budget:

- a chunk never ends inside a word: the cut moves back to the last token that starts a new
  word (a token preceded by a character that produced no token, i.e. whitespace), so that
  tokenizing the chunk alone gives the same tokens as it had in the document (WordPiece
  splits words independently). Only a single word longer than ``max_tokens`` tokens is cut
  mid-word;
- characters between two chunks that produced no token (whitespace, control characters) go
  to the earlier chunk, then each chunk is stripped, so
  ``doc.text[unit.start_char:unit.end_char] == unit.text`` and no visible character is lost.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence

from windowrag_pg.parse.types import ParsedDocument, Unit

TokenOffsets = Callable[[str], Sequence[tuple[int, int]]]


def chunk_units(doc: ParsedDocument, *, max_tokens: int, token_offsets: TokenOffsets) -> list[Unit]:
    """Cut ``doc.text`` into consecutive chunks of at most ``max_tokens`` tokens (kind "chunk").

    ``token_offsets(text)`` gives the character ``(start, end)`` of each token of the
    embedding tokenizer, special tokens excluded, in text order.
    """
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive integer, not {max_tokens!r}")
    text = doc.text
    offsets = [(int(s), int(e)) for s, e in token_offsets(text)]
    if not offsets:
        return []
    starts = _chunk_start_tokens(text, offsets, max_tokens)
    section_starts = [section.start_char for section in doc.sections]
    units: list[Unit] = []
    for number, first in enumerate(starts):
        begin = offsets[first][0]
        end = offsets[starts[number + 1]][0] if number + 1 < len(starts) else len(text)
        raw = text[begin:end]
        stripped_left = len(raw) - len(raw.lstrip())
        stripped = raw.strip()
        if not stripped:
            continue
        start_char = begin + stripped_left
        end_char = start_char + len(stripped)
        section_ordinal, page = _locate(doc, section_starts, start_char)
        units.append(Unit(kind="chunk", section_ordinal=section_ordinal, start_char=start_char,
                          end_char=end_char, text=stripped, page=page))
    return units


def _chunk_start_tokens(text: str, offsets: list[tuple[int, int]], max_tokens: int) -> list[int]:
    """Index of the first token of each chunk."""
    # word_start[i]: token i begins a new word (something that made no token, e.g. a space,
    # lies between it and the token before, or it is the first token)
    word_start = [True] + [
        offsets[i][0] > offsets[i - 1][1] and text[offsets[i - 1][1]:offsets[i][0]].strip() == ""
        for i in range(1, len(offsets))
    ]
    starts = [0]
    first = 0
    while first + max_tokens < len(offsets):
        cut = first + max_tokens  # first token of the next chunk, ideally
        back = cut
        while back > first and not word_start[back]:
            back -= 1
        if back > first:
            cut = back
        starts.append(cut)
        first = cut
    return starts


def _locate(doc: ParsedDocument, section_starts: list[int], char: int) -> tuple[int, int | None]:
    """The section holding ``char`` (the last one starting at or before it) and its page."""
    if not doc.sections:
        return 0, None
    index = max(0, bisect.bisect_right(section_starts, char) - 1)
    section = doc.sections[index]
    page = None
    for block in section.blocks:
        if block.start_char <= char < block.end_char or block.start_char >= char:
            page = block.page
            break
    return section.ordinal, page
