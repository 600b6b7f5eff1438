"""Blocks -> retrieval units (sentences, list items, table rows, headings, code).

Invariant: for every unit ``doc.text[unit.start_char:unit.end_char] == unit.text``; units are
stripped of surrounding whitespace, non-empty, in document order, non-overlapping, inside their
section, and no longer than ``max_unit_chars``.

- paragraph -> "sentence" units, split by Bling Fire, with three fixes: a piece that is only an
  enumerator ("1.", "(a)") is glued to the next sentence, so is a piece ending with a title
  abbreviation ("Dr.", "Brown v."), and a sentence longer than
  ``CLAUSE_SPLIT_MIN_CHARS`` holding an inline enumeration ("...: (a) foo; (b) bar; and (c) baz")
  is cut before each enumerator (contracts put whole lists, and their evidence, in one sentence);
- list_item -> one "list_item" unit, or one per sentence when longer than
  ``LIST_ITEM_WHOLE_MAX_CHARS`` (a short item reads best whole: "Step 2. Run the script");
- heading, table_row -> one unit each;
- code -> one "code" unit, cut at line breaks only when longer than ``max_unit_chars``.
Any unit still longer than ``max_unit_chars`` is cut at whitespace (hard cut when there is none).
A change that may cut the same text otherwise bumps ``windowrag_pg.ingest.UNITS_VERSION``.

Bling Fire works on UTF-8 bytes. Its own Python wrapper maps offsets back with a Python loop
over every byte and fails on some inputs, so this module calls the C function directly and maps
byte offsets to ``str`` offsets itself (identity for ASCII, incremental decoding otherwise).
Only sentence *starts* are used: each sentence runs to the next start, then is stripped, so no
character of a block is ever lost even if Bling Fire skipped one.
"""
from __future__ import annotations

import ctypes
import re

from blingfire import blingfire as _blingfire_lib

from windowrag_pg.parse.types import Block, ParsedDocument, Unit

DEFAULT_MAX_UNIT_CHARS = 2000
LIST_ITEM_WHOLE_MAX_CHARS = 500

_UNIT_KIND_BY_BLOCK_KIND = {
    "paragraph": "sentence",
    "list_item": "list_item",
    "heading": "heading",
    "table_row": "table_row",
    "code": "code",
}
# A "sentence" that is only an enumerator ("1.", "2.3", "(a)", "iv)"): Bling Fire cuts "1. Scope"
# into "1." and "Scope"; such a piece is glued to the sentence after it.
_ENUMERATOR_ONLY_RE = re.compile(  # (in Markdown's emphasis too: "**Q.**", "**A.")
    r"[*_]{0,3}\(?(?:\d{1,3}(?:\.\d{1,3})*|[A-Za-z]|[ivx]{1,5}|[IVX]{1,5})[.)]?\)?[*_]{0,3}"
)
# Abbreviations after which Bling Fire sometimes cuts, though they seldom end a sentence: titles
# before a name, "v." between the parties of a case; "No." only before a number ("No. 3").
_TITLE_ABBREVIATION_RE = re.compile(r"(?:^|(?<=[\s(]))(Dr|Mr|Mrs|Ms|Prof|vs?|No|no)\.\Z")
_NUMBER_START_RE = re.compile(r"\d")
# ...unless the next sentence opens with a word that starts sentences, not names ("I spoke to the
# Dr. She said", "See item v. Then stop"; a case may be "R v. The Queen"), or a title follows a
# determiner ("I visited the Dr. Results were fine": a title before a name has none).
_SENTENCE_OPENERS = (
    "I|He|She|It|They|We|You|Then|This|That|These|Those|There|But|So|And|Or|A|An|When|While|If|As|"
    "At|In|On|For|After|Before|Most|Many|Some|All|Please|Yes|No|Nobody|Nothing|What|How|Why|Where|"
    "Who|My|Our|Your|His|Her|Their|Its"
)
_SENTENCE_OPENER_RE = re.compile(rf"(?:{_SENTENCE_OPENERS})\b")
_TITLE_OPENER_RE = re.compile(rf"(?:{_SENTENCE_OPENERS}|The)\b")
_DETERMINER_BEFORE_RE = re.compile(r"(?:^|\s)(?:the|a|an|my|your|our|his|her|their|this|that)\s+\S+\Z", re.IGNORECASE)
# Sentences longer than this are also cut before inline enumerations ("...: (a) foo; (b) bar").
CLAUSE_SPLIT_MIN_CHARS = 200
# An inline enumerator after a clause break: "; (b) foo", ": (i) foo", ", and (c) foo". The cut
# goes before the enumerator (group 1), so "; and" stays with the clause it ends.
_INLINE_ENUMERATOR_RE = re.compile(
    r"[;:,]\s+(?:(?:and|or)\s+)?(\((?:[a-z]|[ivx]{1,6}|[A-Z]|\d{1,2})\))\s+\w"
)
# Blocks of these kinds are never split into sentences, only cut when too long.
_WHOLE_BLOCK_KINDS = frozenset({"heading", "table_row", "code"})

Span = tuple[int, int]


def split_units(doc: ParsedDocument, *, max_unit_chars: int = DEFAULT_MAX_UNIT_CHARS) -> list[Unit]:
    """All units of ``doc``, in document order."""
    if max_unit_chars < 1:
        raise ValueError(f"max_unit_chars must be at least 1, got {max_unit_chars}")
    text = doc.text
    strip_quote_markers = doc.format == "markdown"
    units: list[Unit] = []
    for section in doc.sections:
        for block in section.blocks:
            unit_kind = _UNIT_KIND_BY_BLOCK_KIND.get(block.kind, "sentence")
            for start, end in block_spans(text, block, max_unit_chars):
                if strip_quote_markers and block.kind != "code":
                    start = _skip_quote_markers(text, start, end)
                if start < end:
                    units.append(
                        Unit(unit_kind, section.ordinal, start, end, text[start:end], block.page)
                    )
    return units


def block_spans(text: str, block: Block, max_unit_chars: int) -> list[Span]:
    """The stripped unit spans of one block."""
    start, end = block.start_char, block.end_char
    length = end - start
    if block.kind in _WHOLE_BLOCK_KINDS or (
        block.kind == "list_item" and length <= LIST_ITEM_WHOLE_MAX_CHARS
    ):
        spans = [_strip(text, start, end)]
    else:
        spans = sentence_spans(text, start, end)
    prefer_newlines = block.kind == "code"
    result: list[Span] = []
    for span_start, span_end in spans:
        if span_end - span_start > max_unit_chars:
            result.extend(cut_long_span(text, span_start, span_end, max_unit_chars, prefer_newlines))
        elif span_start < span_end:
            result.append((span_start, span_end))
    return result


# Bling Fire's buffers take ~18 bytes per input byte, so a paragraph longer than this (a
# megabytes-long line without breaks) is scanned in pieces cut at whitespace.
SENTENCE_SCAN_CHARS = 64_000
_SENTENCE_END_RE = re.compile(r"[.!?。！？][\"')\]»”’]*\Z")


def sentence_spans(text: str, start: int, end: int) -> list[Span]:
    """Stripped sentence spans of ``text[start:end]`` (absolute offsets), by Bling Fire."""
    scanned = (_long_sentence_spans if end - start > SENTENCE_SCAN_CHARS else _scanned_sentence_spans)(text, start, end)
    return [piece for span in scanned for sentence in _danda_spans(text, span)
            for piece in clause_spans(text, *sentence)]


# Bling Fire does not end a sentence at the danda ("।", "॥") of Hindi, Marathi, Nepali, Bengali
# ...: a paragraph stayed one unit up to the unit cap.
_DANDA_END_RE = re.compile(r"[।॥]+(?=\s)")


def _danda_spans(text: str, span: Span) -> list[Span]:
    """SPAN cut after each danda followed by white space."""
    start, end = span
    if "।" not in text[start:end] and "॥" not in text[start:end]:
        return [span]
    pieces, piece_start = [], start
    for danda in _DANDA_END_RE.finditer(text, start, end):
        pieces.append(_strip(text, piece_start, danda.end()))
        piece_start = danda.end()
    pieces.append(_strip(text, piece_start, end))
    return [piece for piece in pieces if piece[0] < piece[1]]


def _long_sentence_spans(text: str, start: int, end: int) -> list[Span]:
    """Sentences of a span too long for one Bling Fire call, scanned in whitespace-cut pieces.

    A piece cut is not a sentence end: the sentence running into it is joined with the one the
    next piece starts with, so the later unit cap cuts the text as if it were scanned in one pass.
    """
    spans: list[Span] = []
    for piece_start, piece_end in cut_long_span(text, start, end, SENTENCE_SCAN_CHARS):
        piece_spans = _scanned_sentence_spans(text, piece_start, piece_end)
        if spans and piece_spans and not _SENTENCE_END_RE.search(text, spans[-1][0], spans[-1][1]):
            first = piece_spans.pop(0)
            spans[-1] = (spans[-1][0], first[1])
        spans.extend(piece_spans)
    return spans


def _scanned_sentence_spans(text: str, start: int, end: int) -> list[Span]:
    """Stripped sentence spans of one Bling Fire call over ``text[start:end]``."""
    segment = text[start:end]
    if not segment.strip():
        return []
    encoded = segment.encode("utf-8")
    starts = _sentence_byte_starts(encoded)
    if not segment.isascii():
        starts = _byte_to_char_offsets(encoded, starts)
    cuts = [0, *starts, len(segment)]
    spans: list[Span] = []
    glue_to_next = False
    for piece_start, piece_end in zip(cuts, cuts[1:]):
        span = _strip(text, start + piece_start, start + piece_end)
        if span[0] >= span[1]:
            continue
        if glue_to_next or (spans and _ends_with_title_abbreviation(text, spans[-1], span)):
            span = (spans.pop()[0], span[1])
        spans.append(span)
        glue_to_next = _ENUMERATOR_ONLY_RE.fullmatch(text, span[0], span[1]) is not None
    return spans


def _ends_with_title_abbreviation(text: str, previous: Span, span: Span) -> bool:
    """Whether Bling Fire cut after an abbreviation that does not end this sentence ("Brown v." |
    "Board of Education", "Dr." | "Thomas Coke", "Clause No." | "3 applies")."""
    match = _TITLE_ABBREVIATION_RE.search(text, previous[0], previous[1])
    if match is None:
        return False
    if match.group(1) in ("No", "no"):
        return _NUMBER_START_RE.match(text, span[0], span[1]) is not None
    if match.group(1) in ("v", "vs"):
        return _SENTENCE_OPENER_RE.match(text, span[0], span[1]) is None
    if _DETERMINER_BEFORE_RE.search(text, previous[0], previous[1]):
        return False
    return _TITLE_OPENER_RE.match(text, span[0], span[1]) is None


def clause_spans(text: str, start: int, end: int) -> list[Span]:
    """A long sentence cut before its inline enumerations ("...: (a) foo; (b) bar; and (c) baz").

    Legal and technical text packs whole lists into one sentence; each item reads (and is
    quoted as evidence) on its own. Needs two enumerators or more, so that "see (a) above" stays.
    """
    if end - start <= CLAUSE_SPLIT_MIN_CHARS:
        return [(start, end)]
    cuts = [match.start(1) for match in _INLINE_ENUMERATOR_RE.finditer(text, start, end)]
    if len(cuts) < 2:
        return [(start, end)]
    bounds = [start, *cuts, end]
    pieces = (_strip(text, a, b) for a, b in zip(bounds, bounds[1:]))
    return [piece for piece in pieces if piece[0] < piece[1]]


def cut_long_span(
    text: str, start: int, end: int, max_chars: int, prefer_newlines: bool = False
) -> list[Span]:
    """Cut ``text[start:end]`` into stripped pieces of at most ``max_chars`` characters.

    Cuts at the last line break (when ``prefer_newlines``) or whitespace in the second half of
    each window, else hard at ``max_chars``. Each window advances at least ``max_chars // 2``
    characters, so the whole cut is linear in the span length.
    """
    pieces: list[Span] = []
    position = start
    while end - position > max_chars:
        window_end = position + max_chars
        earliest = position + max(1, max_chars // 2)
        cut = -1
        if prefer_newlines:
            cut = text.rfind("\n", earliest, window_end + 1)
        if cut < 0:
            cut = max(text.rfind(space, earliest, window_end + 1) for space in " \t\n\r\u3000")
        if cut <= position:
            cut = window_end
        piece = _strip(text, position, cut)
        if piece[0] < piece[1]:
            pieces.append(piece)
        position = cut
        while position < end and text[position].isspace():
            position += 1
    piece = _strip(text, position, end)
    if piece[0] < piece[1]:
        pieces.append(piece)
    return pieces


def _sentence_byte_starts(encoded: bytes) -> list[int]:
    """Byte offsets where sentences 2..n start, strictly increasing, inside ``encoded``."""
    size = 2 * len(encoded) + 16  # the wrapper's own sizing: output may grow (added newlines)
    output = ctypes.create_string_buffer(size)
    begins = (ctypes.c_int32 * size)()
    ends = (ctypes.c_int32 * size)()
    written = _blingfire_lib.TextToSentencesWithOffsets(
        ctypes.c_char_p(encoded), ctypes.c_int(len(encoded)), ctypes.byref(output),
        ctypes.byref(begins), ctypes.byref(ends), ctypes.c_int(size),
    )
    if written <= 0 or written > size:
        return []  # Bling Fire failed: keep the block as one piece (cut later if too long)
    count = output.value.count(b"\n") + 1  # sentences come out one per line
    starts = []
    previous = 0
    for offset in begins[1:count]:
        # Guard against any odd entry: keep only increasing offsets inside the text.
        if previous < offset < len(encoded):
            starts.append(offset)
            previous = offset
    return starts


def _byte_to_char_offsets(encoded: bytes, byte_offsets: list[int]) -> list[int]:
    """Map increasing UTF-8 byte offsets to str offsets by decoding the gaps between them."""
    char_offsets = []
    previous_byte = 0
    chars = 0
    for offset in byte_offsets:
        # An offset inside a multi-byte character moves to that character's end.
        while offset < len(encoded) and encoded[offset] & 0xC0 == 0x80:
            offset += 1
        if offset <= previous_byte:
            continue
        chars += len(encoded[previous_byte:offset].decode("utf-8"))
        char_offsets.append(chars)
        previous_byte = offset
    return char_offsets


def _strip(text: str, start: int, end: int) -> Span:
    """The span without surrounding whitespace (start == end when it is all whitespace)."""
    segment = text[start:end]
    stripped_left = segment.lstrip()
    if not stripped_left:
        return end, end
    start += len(segment) - len(stripped_left)
    return start, start + len(stripped_left.rstrip())


def _skip_quote_markers(text: str, start: int, end: int) -> int:
    """Move a Markdown unit start past blockquote markers (">") that begin its line.

    A sentence that starts on a continuation line of a quoted paragraph would otherwise read
    "> Next sentence"; a ">" is only a marker when nothing but spaces and ">" precede it on its line.
    """
    if start >= end or text[start] != ">":
        return start
    line_start = text.rfind("\n", 0, start) + 1
    if text[line_start:start].strip(" \t>"):
        return start
    position = start
    while position < end and (text[position] == ">" or text[position].isspace()):
        position += 1
    return position
