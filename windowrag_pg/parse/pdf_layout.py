"""From a PDF's printed lines to paragraph blocks: pure functions, no I/O (parse/pdf.py reads the
lines with pypdf and builds the document from these blocks).

pypdf gives one line per printed line and no paragraph breaks. The rules, each written against a
false positive found on real or realistic PDFs:

- **Page furniture** (`without_page_furniture`), among a page's first and last two lines: a page
  number (bare, "Page 3 of 10", "- 4 -", roman in the front matter) equal to the physical page
  or to the printed one (printed numbers follow the pages at one offset, found from the numbers
  at the pages' edges); a running header or footer, i.e. a line that comes back at the edges of
  other pages equal but for the page's number ("Chapter 4: Function reference 9" on two or more
  pages) or identical on at least three pages and a third of them ("Shared MIME-info Database"),
  its first appearance kept as a block of its own (a cover title, a table's header row). Other
  numbers must match:
  an invoice's number, a balance, a log row are content. A line an outline entry points to is
  never furniture ("Article 2" on page 2).
- **Tables of contents and indexes** (`without_dot_leaders`): dot-leader lines ("Simple parsing
  . . . . 4") on a page where they are most of the lines and every page number they give exists.
  A phone or price list with leaders keeps them.
- **Blocks** (`page_blocks`): a block runs over "full" lines (70% of the page's width) and ends
  at a short line or a blank line. The width is the widest line, unless on a page of ten lines
  or more it is an outlier (over 1.2 times the typical wide line: a title across two columns, a
  command in a small font), which is then a block of its own unless the next line goes on in
  lower case. A bullet ("•", and "–", "-", "·" after a sentence's end or another such item)
  starts a block.
- **Hyphenation** (`join_lines`): "exam-" + "ination" is joined only when "examination" is a
  word elsewhere in the document; word processors print real hyphens at line ends ("well-" /
  "known", "short-" / "and long-term").
- **Page breaks** (`continues`): the first block of a page goes on with the last of the page
  before when that one ends on a full line with no sentence end and the block opens in lower
  case; the page's text up to its first sentence end joins it (the sentence keeps the page it
  starts on).
- **Headings from the outline** (`with_outline_headings`): each bookmark is looked for, in
  order, on its destination page as a printed line (or two) that ends with its title (numbers,
  case and punctuation aside: "2.13. Nonregular files" finds "Non-regular files"), that opens a
  block or follows a sentence's end, is no bullet and does not end a sentence the title does not
  end; it becomes a heading block, cut from the text around it.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

Pages = list[tuple[int, list[str]]]  # (1-based page, stripped lines)

# A line at least this share of the page's width is "full": the paragraph goes on.
FULL_LINE_SHARE = 0.7
_OUTLIER_WIDTH = 1.2
_OUTLIER_MIN_LINES = 10
_BULLETS = frozenset("•◦▪▫‣●○■□")
_LOOSE_BULLETS = frozenset("–—-·*")  # bullets only in a list: after a sentence's end or another item
_EDGE_LINES = 2
_RUNNING_MIN_PAGES = 3
_RUNNING_MIN_SHARE = 1 / 3
_RUNNING_MAX_CHARS = 100
_MAX_FRONT_MATTER = 100  # physical − printed page number, at most
_MAX_EXCERPT_OFFSET = 20
_NUMBER = re.compile(r"\d{1,5}")
_ROMAN = re.compile(r"(?i)^(?=[ivxlc])(c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})$")
_PAGE_NUMBER = re.compile(r"(?i)^(?:page\s+)?[-–—(\[]?\s*(\d{1,5}|[ivxlc]{1,7})\s*[-–—)\]]?(?:\s*(?:of|/)\s*\d{1,5})?$")
_END_NUMBERS = re.compile(r"^\d{1,5}(?=\s)|(?<=\s)\d{1,5}$")
_DOT_LEADER = re.compile(r"(?:\.\s?){4,}\s*(\d{1,5}|[ivxlc]{1,7})((?:\s*,\s*\d{1,5})*)$")
_SENTENCE_END = re.compile(r"[.!?:;][\"')\]”’]*$")
_FIRST_SENTENCE_END = re.compile(r"[.!?][\"')\]”’]*(?=\s|$)")
_WORD = re.compile(r"[^\W\d_]{3,}")


def without_page_furniture(pages: Pages, *, protected: set[tuple[int, int]] = frozenset()) -> Pages:
    """PAGES' lines without page numbers and running headers and footers (module docstring);
    PROTECTED (page, line index) pairs are kept whatever they look like."""
    least = max(_RUNNING_MIN_PAGES, _RUNNING_MIN_SHARE * len(pages))
    printed = _printed_offset(pages, least)

    def numbers_of(page: int) -> set[int]:
        return {page} | ({page - printed} if printed is not None else set())

    def shape(line: str, page: int) -> str:  # the line with the page's own number, first or last, as "#"
        own = numbers_of(page)
        return _END_NUMBERS.sub(lambda m: "#" if int(m.group()) in own else m.group(), " ".join(line.lower().split()))

    shapes = {page: {i: shape(lines[i], page) for i in _edges(lines) if len(lines[i]) <= _RUNNING_MAX_CHARS}
              for page, lines in pages}
    pages_of: dict[str, list[int]] = {}
    for page, by_line in shapes.items():
        for key in set(by_line.values()):
            pages_of.setdefault(key, []).append(page)

    def running(key: str, page: int) -> bool:
        seen = pages_of[key]
        if "#" in key:  # carries the page's number: a header or footer seen on two pages or more,
            # with two words or more beside it ("Article 2" on page 2 is a heading)
            return len(seen) >= 2 and len(_WORD.findall(key)) + len(re.findall(r"\b[^\W\d_]{1,2}\b", key)) >= 2
        return len(seen) >= least and page != seen[0]  # the first kept (a cover title, a header row)

    result = []
    for page, lines in pages:
        kept: list[str] = []
        for i, line in enumerate(lines):
            key = shapes[page].get(i)
            if key is None or (page, i) in protected:
                kept.append(line)
            elif _is_page_number(line, numbers_of(page)):
                continue
            elif "#" not in key and len(pages_of[key]) >= least and page == pages_of[key][0]:
                kept.extend(["", line, ""])  # a running line's first appearance: kept, a block of its own
            elif not running(key, page):
                kept.append(line)
        result.append((page, kept))
    return result


def without_dot_leaders(pages: Pages) -> Pages:
    """PAGES without their table-of-contents and index entries (module docstring)."""
    last_page = max((page for page, _ in pages), default=0)
    result = []
    for page, lines in pages:
        filled = [line for line in lines if line]
        leaders = [m for m in map(_DOT_LEADER.search, filled) if m]
        pointers = [n for m in leaders for n in _leader_pages(m)]
        if len(leaders) >= 3 and 2 * len(leaders) >= len(filled) and all(n <= last_page for n in pointers):
            # an index's letter headings go with its entries
            lines = [line for line in lines if not _DOT_LEADER.search(line) and not re.fullmatch(r"[A-Z]", line)]
        result.append((page, lines))
    return result


def page_blocks(lines: list[str], *, vocabulary: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """A page's (stripped) lines grouped into blocks (module docstring)."""
    width = page_width(lines)
    following = [""] * len(lines)  # the next line with text after each line
    for index in range(len(lines) - 2, -1, -1):
        following[index] = lines[index + 1] or following[index + 1]
    blocks: list[str] = []
    current: list[str] = []
    for index, line in enumerate(lines):
        outlier = len(line) > _OUTLIER_WIDTH * width and not following[index][:1].islower()
        previous = current[-1] if current else ""
        if not line or (current and (outlier or _opens_item(line, previous))):
            if current:
                blocks.append(join_lines(current, vocabulary))
                current = []
            if not line:
                continue
        current.append(line)
        if outlier or len(line) < FULL_LINE_SHARE * width:
            blocks.append(join_lines(current, vocabulary))
            current = []
    if current:
        blocks.append(join_lines(current, vocabulary))
    return blocks


def page_width(lines: list[str]) -> int:
    """The page's full width in characters: its widest line, or the typical wide line when that
    one is an outlier on a page of ten lines or more."""
    lengths = sorted((len(line) for line in lines if line), reverse=True)
    if not lengths:
        return 0
    if len(lengths) >= _OUTLIER_MIN_LINES:
        typical = lengths[max(1, len(lengths) // 20)]
        if lengths[0] > _OUTLIER_WIDTH * typical:
            return typical
    return lengths[0]


def document_vocabulary(pages: Pages) -> set[str]:
    """The lower-case words (three letters or more) printed whole in the document."""
    return {word.lower() for _, lines in pages for line in lines for word in _WORD.findall(line)}


def join_lines(lines: list[str], vocabulary: set[str] | frozenset[str] = frozenset()) -> str:
    """Lines of one block joined by "\\n"; a word hyphenated at a line end joined whole when the
    whole word is in VOCABULARY (module docstring)."""
    pieces = [lines[0]]  # joined once at the end: a page can hold many thousands of lines
    for line in lines[1:]:
        last = pieces[-1]
        if last.endswith("-") and line[:1].islower():
            head = re.search(r"([^\W\d_]+)-$", last)
            tail = re.match(r"[^\W\d_]+", line)
            if head and tail and head.group(1)[-1:].islower() and (head.group(1) + tail.group()).lower() in vocabulary:
                pieces[-1] = last[:-1] + line
                continue
        pieces.append(line)
    return "\n".join(pieces)


def continues(previous: str, previous_width: int, block: str) -> bool:
    """Does BLOCK, the first of a page, go on with the sentence of PREVIOUS, the last block of the
    page before (whose width was PREVIOUS_WIDTH)?"""
    last_line = previous.rsplit("\n", 1)[-1]
    return (len(last_line) >= FULL_LINE_SHARE * previous_width and not _SENTENCE_END.search(previous)
            and block[:1].islower())


def split_after_first_sentence(block: str) -> tuple[str, str]:
    """BLOCK cut after its first sentence end: (head, the rest without its leading space)."""
    end = _FIRST_SENTENCE_END.search(block)
    if end is None:
        return block, ""
    return block[:end.end()], block[end.end():].lstrip()


def outline_lines(pages: Pages, entries: Iterable[tuple[int, str, int]]) -> set[tuple[int, int]]:
    """(page, line index) of every line an outline entry could point to: kept from furniture."""
    by_page = dict(pages)
    found = set()
    for _, title, page in entries:
        wanted = heading_key(title)
        for index, line in enumerate(by_page.get(page, [])):
            if wanted and _matches(line, wanted):
                found.add((page, index))
    return found


def with_outline_headings(blocks: list[tuple[int, str]], entries: list[tuple[int, str, int]]
                          ) -> list[tuple[int, str, tuple[int, str] | None]]:
    """BLOCKS (page, text) with each outline entry's printed line(s) cut out as a block of its
    own, marked (level, title) (module docstring); the others marked None."""
    out: list[tuple[int, str, tuple[int, str] | None]] = [(page, text, None) for page, text in blocks]
    cursor = 0  # entries are found in order
    for level, title, page in entries:
        wanted = heading_key(title)
        if not wanted:
            continue
        for index in range(cursor, len(out)):
            block_page, text, mark = out[index]
            if block_page > page:
                break
            if block_page < page or mark is not None:
                continue
            lines = text.split("\n")
            found = _heading_at(lines, wanted, ends_sentence=bool(_SENTENCE_END.search(title)))
            if found is None:
                continue
            first, last = found
            before, after = "\n".join(lines[:first]), "\n".join(lines[last + 1:])
            pieces = [(before, None), ("\n".join(lines[first:last + 1]), (level, title)), (after, None)]
            out[index:index + 1] = [(block_page, piece, piece_mark) for piece, piece_mark in pieces if piece]
            cursor = index + (1 if before else 0) + 1
            break
    return out


def heading_key(title: str) -> str:
    """A title without its numbering ("2.13.", "A.1", "Appendix A"), letters and digits only."""
    title = re.sub(r"^(?:(?:appendix|chapter|section)\s+)?(?:[A-Z]|\d+)(?:\.\d+)*\.?\s+", "", title.strip(),
                   flags=re.IGNORECASE)
    return _key(title)


def _heading_at(lines: list[str], wanted: str, *, ends_sentence: bool) -> tuple[int, int] | None:
    """(first, last) line of the heading WANTED among LINES, or None."""
    for first, line in enumerate(lines):
        opens = first == 0 or bool(_SENTENCE_END.search(lines[first - 1]))
        if not opens or line[:1] in _BULLETS or line[:1] in _LOOSE_BULLETS:
            continue
        for last in (first, first + 1)[: 2 if first + 1 < len(lines) else 1]:
            printed = " ".join(lines[first:last + 1])
            if _matches(printed, wanted) and (ends_sentence or not printed.endswith(".")):
                return first, last
    return None


def _matches(line: str, wanted: str) -> bool:
    key = _key(line)
    return key.endswith(wanted) and len(key) <= len(wanted) + 12


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _edges(lines: list[str]) -> list[int]:
    """Indexes of the first and last lines with text."""
    filled = [i for i, line in enumerate(lines) if line]
    return sorted(set(filled[:_EDGE_LINES] + filled[-_EDGE_LINES:]))


def _printed_offset(pages: Pages, least: float) -> int | None:
    """physical − printed page number when the numbers at the pages' edges agree on one offset
    on LEAST pages or more (front matter, a cover), else None."""
    offsets = Counter(offset for page, lines in pages
                      for offset in {page - int(n) for i in _edges(lines) if len(lines[i]) <= _RUNNING_MAX_CHARS
                                     for n in _END_NUMBERS.findall(lines[i]) + _PAGE_NUMBER.findall(lines[i])
                                     if n.isdigit()})
    if not offsets:
        return None
    offset, count = offsets.most_common(1)[0]
    # printed numbers a little behind the pages (front matter) or ahead (an excerpt), not an
    # invoice's number running with the pages ("Invoice No. 1001" on page 1)
    return offset if count >= least and offset != 0 and -_MAX_EXCERPT_OFFSET <= offset <= _MAX_FRONT_MATTER else None


def _is_page_number(line: str, own: set[int]) -> bool:
    match = _PAGE_NUMBER.match(line)
    if not match:
        return False
    number = match.group(1)
    if number.isdigit():
        return int(number) in own
    roman = _ROMAN.match(number)  # front matter: i, ii, iv ... up to the page itself
    return bool(roman) and 0 < _roman_value(number) <= max(own)


def _roman_value(numeral: str) -> int:
    values = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}
    total = 0
    for char, following in zip(numeral.lower(), numeral.lower()[1:] + " "):
        value = values[char]
        total += -value if following != " " and values[following] > value else value
    return total


def _leader_pages(match: re.Match) -> list[int]:
    first, rest = match.group(1), match.group(2)
    pages = [_roman_value(first) if not first.isdigit() else int(first)]
    return pages + [int(n) for n in re.findall(r"\d+", rest)]


def _opens_item(line: str, previous: str) -> bool:
    """Does LINE open a list item (a block of its own)?"""
    if line[:1] in _BULLETS:
        return True
    if line[:1] in _LOOSE_BULLETS and line[1:2] == " ":
        return bool(_SENTENCE_END.search(previous)) or previous[:1] == line[:1]
    return False
