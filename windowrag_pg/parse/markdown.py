"""Markdown -> sections of blocks, with markdown-it-py (CommonMark plus tables).

``ParsedDocument.text`` is the input unchanged. markdown-it gives every block token a line range
(``token.map``); a table of line starts turns lines into character offsets, and the token's own
content locates the exact start inside the first line (after ``#``, ``-``, ``1.``, ``>`` markers).

- ATX and setext headings open sections; the heading path is the stack of heading texts by level,
  rendered to plain text from the inline tokens. Each heading is also a "heading" block covering
  the heading text without its markers.
- Paragraphs are "paragraph" blocks (split into sentences later); paragraphs inside a list item
  are "list_item" blocks; paragraphs in a blockquote are paragraphs. A raw HTML block gives the
  runs of text between its block-level tags (an item, a div's text) as paragraphs, without the
  markup around them: `</div>\n<div class="item">` alone is not a sentence. A table row (`<tr>`)
  is one "table_row" block from its first cell's text to its last's, as a Markdown table's row
  is (the markup between its cells is the document's text, so it stays in the slice). HTML
  comments, and the content of scripts, styles and the other elements the HTML parser drops, are
  skipped.
- Each table row (header included, the ``|---|`` delimiter row excluded) is a "table_row" block.
- Fenced code keeps only the lines between the fences; indented code keeps its lines.
- YAML front matter (``---`` ... ``---`` at the very top) is not content: its lines are blanked
  before parsing (line numbers stay the same) and produce no blocks. Its ``title:``, when it has
  one, is the page's title (before the first H1) unless the caller gives one.
- Containers nested deeper than markdown-it's ``maxNesting`` (20 levels of blockquotes / lists)
  are skipped by markdown-it without a trace; their lines are kept here as plain paragraph
  blocks, one per line, without the container markers, so that no text is silently lost.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

from windowrag_pg.parse import (
    HTML_BLOCK_TAGS,
    HTML_DROPPED_TAGS,
    HeadingMark,
    build_sections,
    require_blocks,
)
from windowrag_pg.parse.types import Block, ParsedDocument

# markdown-it splits lines exactly like this (rules_core/normalize.py), so its line numbers match.
_NEWLINE_RE = re.compile(r"\r\n?|\n")
# Blockquote markers at the start of a table row line inside a blockquote ("> > | a | b |").
_QUOTE_MARKERS_RE = re.compile(r"[ \t]*(?:>[ \t]?)+")
_FRONT_MATTER_CLOSERS = ("---", "...")
# `title: Some page` (a plain or quoted scalar), or `title: >` / `|` with the title on the indented
# lines below (a block scalar); lines may end in \r\n
_FRONT_MATTER_TITLE_RE = re.compile(
    r"^title[ \t]*:[ \t]*(\S[^\r\n]*?)[ \t]*\r?$((?:\n[ \t]+\S[^\r\n]*\r?$)*)", re.MULTILINE)
# Container markers at the start of a line: blockquote ">", bullets, ordered list numbers.
_CONTAINER_MARKERS_RE = re.compile(r"(?:[ \t]*(?:>|[-*+](?=[ \t]|$)|\d{1,9}[.)](?=[ \t]|$)))*[ \t]*")

# Raw HTML inside Markdown: a tag (quoted attribute values may hold ">"), a comment, a
# declaration, a processing instruction (to the next ">"; a "<?" with no ">" before the next tag
# is text).
_HTML_MARKUP_RE = re.compile(
    r"<!---?>|<!--.*?(?:-->|\Z)|<(/?)([A-Za-z][A-Za-z0-9-]*)(?:\s(?:\"[^\"]*\"|'[^']*'|[^<>\"'])*)?/?>|<![^<>]*>|<\?[^<>]*>",
    re.DOTALL,
)
# Tags that end a run of text (the HTML parser's block tags, rows, headings, breaks and images);
# inline tags (<kbd>, <strong>, <a>) stay inside the text they mark.
_HTML_BREAKING_TAGS = HTML_BLOCK_TAGS | {"br", "img", "pre", "tr", "h1", "h2", "h3", "h4", "h5", "h6"}
# Where raw HTML tables open and close (a table left open by a block runs on to its close).
_HTML_TABLE_TAG_RE = re.compile(r"<(/?)table\b[^>]*>", re.IGNORECASE)
# Elements whose content is not text (the HTML parser's): skipped to their closing tag, whatever
# they hold ("<!--" in a script is not a comment).
_HTML_SKIPPED_CLOSERS = {name: re.compile(rf"</{name}\s*>", re.IGNORECASE) for name in HTML_DROPPED_TAGS}

# Block structure only: inline parsing is most of markdown-it's time and only headings need it,
# so they are parsed on demand by a second parser (with the link references of the first).
_BLOCK_PARSER = MarkdownIt("commonmark").enable("table").disable("inline")
_INLINE_PARSER = MarkdownIt("commonmark")


class LineTable:
    """Character offsets of each line's start and end (end excludes the line break)."""

    def __init__(self, text: str) -> None:
        self.text_length = len(text)
        self.starts = [0]
        self.ends = []
        for newline in _NEWLINE_RE.finditer(text):
            self.ends.append(newline.start())
            self.starts.append(newline.end())
        self.ends.append(len(text))

    def __len__(self) -> int:
        return len(self.starts)

    def start(self, line: int) -> int:
        return self.starts[line] if line < len(self.starts) else self.text_length

    def end(self, line: int) -> int:
        """End of ``line`` without its line break."""
        return self.ends[line] if line < len(self.ends) else self.text_length


def parse_markdown(text: str, *, title: str | None = None) -> ParsedDocument:
    lines = LineTable(text)
    env: dict = {}  # collects link reference definitions, for headings like "[Docs][docs]"
    front_matter = _front_matter_lines(text, lines)
    tokens = _BLOCK_PARSER.parse(_without_front_matter(text, lines, front_matter), env)
    items: list[Block | HeadingMark] = []
    containers: list[str] = []  # open list items / blockquotes, innermost last
    first_title: str | None = None
    # A raw HTML table runs to its </table> although markdown-it ends an HTML block at a blank
    # line: what it parses between (a cell's paragraphs and lists) is the table's text
    html_table_until = 0  # the line after the open table's end
    for index, token in enumerate(tokens):
        kind = token.type
        if kind in ("list_item_open", "blockquote_open"):
            containers.append(kind.removesuffix("_open"))
            if _skipped_for_nesting(tokens, index) and token.map[0] >= html_table_until:
                items.extend(_skipped_lines(text, lines, token))
        elif kind in ("list_item_close", "blockquote_close"):
            containers.pop()
        elif token.map and token.map[0] < html_table_until:
            continue
        elif kind == "heading_open" and token.map:
            inline = tokens[index + 1]
            level = int(token.tag[1:])
            heading_text = heading_plain_text(inline.content, env)
            if not heading_text:
                continue  # an empty "#" line is a separator, not a section
            if first_title is None and level == 1:
                first_title = heading_text
            items.append(HeadingMark(lines.start(token.map[0]), level, heading_text))
            items.extend(_block("heading", text, _heading_span(text, lines, token, inline)))
        elif kind == "paragraph_open" and token.map:
            block_kind = "list_item" if containers and containers[-1] == "list_item" else "paragraph"
            span = _paragraph_span(text, lines, tokens[index + 1])
            items.extend(_block(block_kind, text, span))
        elif kind == "tr_open" and token.map:
            items.extend(_block("table_row", text, _row_span(text, lines, token, containers)))
        elif kind in ("fence", "code_block") and token.map:
            items.extend(_block("code", text, _code_span(lines, token)))
        elif kind == "html_block" and token.map and not _is_html_comment(token.content):
            html_table_until = _html_table_end_line(text, lines, token)
            items.extend(_html_block(text, lines, token, containers, html_table_until))
    sections = require_blocks(build_sections(len(text), items), "markdown")
    if title is None:  # a static site's page names itself in its front matter, often with no H1
        title = _front_matter_title(text, lines, front_matter) or first_title
    return ParsedDocument(text=text, sections=sections, title=title, format="markdown")


def html_text_blocks(text: str, start: int, end: int, *, markers: Sequence[tuple[int, int]] = ()) -> list[Block]:
    """The runs of text of the raw HTML in ``text[start:end]``, cut at block-level tags.

    Each run is a slice of the document (offsets stay exact), so the inline tags within a run stay
    in it, with those opened just before its first word and closed in it, and those it opened
    closed just after its last ("<strong>Revised:</strong> July 27", not "Revised:</strong> July
    27"; a tag closed in another run is left to it); markup with no text
    between (closing and opening divs, rows, images) gives no block. The runs of one <tr> make one
    "table_row" block (with the markup between them; a tag the row's first run opened before its
    text is in it when the row closes it). The content of <script>, <style> and the like is
    skipped. ``markers`` are ranges that are not content either (the blockquote markers of a
    quoted HTML block's lines); they cut runs as block tags do.
    """
    blocks: list[Block] = []
    row: list[int] = []  # inside a <tr>: the start and end of its runs so far (the row is one block)
    in_row = False
    # the row's first run opened inline tags before its first word and did not close them: where
    # the first tag starts, and the tags still open (closed later in the row, they go in the row)
    row_opening: list[tuple[int, list[str]]] = []
    run: list[int] = []  # start and end of the current run, and where its first word starts
    leading: list[tuple[str, int]] = []  # inline tags opened since the last cut, before any text
    opened: list[tuple[str, bool]] = []  # inline tags opened in the run (True: before its text)

    def cut() -> None:
        if run:
            # a tag opened before the first word and not closed in the run: start at the word
            start_at = run[2] if any(before for _, before in opened) else run[0]
            if in_row:
                if not row and start_at != run[0]:
                    row_opening[:] = [(run[0], [name for name, before in opened if before])]
                row[:] = [row[0], run[1]] if row else [start_at, run[1]]
            else:
                blocks.extend(_block("paragraph", text, (start_at, run[1])))
            run.clear()
        leading.clear()
        opened.clear()

    def end_row() -> None:
        nonlocal in_row
        cut()
        if row:
            blocks.extend(_block("table_row", text, (row[0], row[1])))
            row.clear()
        row_opening.clear()
        in_row = False

    def close_in_row(name: str, closed_at: int) -> None:
        """A tag the row's first run left open, closed further on in the row: the row holds both."""
        if row_opening and name in row_opening[0][1]:
            row_opening[0][1].remove(name)
            if not row_opening[0][1]:
                row[0] = row_opening[0][0]
                row_opening.clear()
            if run:
                run[1] = closed_at
            else:
                row[1] = max(row[1], closed_at)

    def add_text(a: int, b: int) -> None:
        if text[a:b].strip():
            if run:
                run[1] = b
            else:
                run[:] = [leading[0][1] if leading else a, b, a]
                opened[:] = [(name, True) for name, _ in leading]
                leading.clear()

    def close_inline(name: str, closed_at: int) -> bool:
        """A closing inline tag stays with the run only when the run opened it."""
        for index in range(len(opened) - 1, -1, -1):
            if opened[index][0] == name:
                del opened[index]
                run[1] = closed_at
                return True
        return False

    marker_ends = [marker_end for _, marker_end in markers]  # markers are in order, apart

    def add_text_between(a: int, b: int) -> None:
        for index in range(bisect.bisect_right(marker_ends, a), len(markers)):
            marker_start, marker_end = markers[index]
            if marker_start >= b:
                break
            add_text(a, max(a, marker_start))
            cut()
            a = min(b, max(a, marker_end))
        add_text(a, b)

    position = start
    while position < end:
        markup = _HTML_MARKUP_RE.search(text, position, end)
        if markup is None:
            break
        add_text_between(position, markup.start())
        position = markup.end()
        name = (markup.group(2) or "").lower()
        closing = markup.group(1) == "/"
        if name in ("tr", "table"):  # a row ends at the next row or the table's end
            end_row()
            in_row = name == "tr" and not closing
        elif markup.group(2) is None or name in _HTML_BREAKING_TAGS:  # a comment, a declaration too
            cut()
        elif name in _HTML_SKIPPED_CLOSERS and not closing:
            cut()
            closer = None if markup.group(0).endswith("/>") else _HTML_SKIPPED_CLOSERS[name].search(text, position, end)
            if closer is not None:  # unclosed (markdown-it then runs the block to the end): text
                position = closer.end()
        elif closing:
            if not close_inline(name, markup.end()) and in_row:
                close_in_row(name, markup.end())
        elif run:
            opened.append((name, False))
        else:
            leading.append((name, markup.start()))
    add_text_between(position, end)
    end_row()
    return blocks


def heading_plain_text(source: str, env: dict | None = None) -> str:
    """Inline Markdown rendered as plain text: link and emphasis markup dropped, code kept."""
    if not source.strip():
        return ""
    tokens = _INLINE_PARSER.parseInline(source, env if env is not None else {})
    return " ".join(_plain_text(tokens[0].children or []).split())


def _plain_text(children: list[Token]) -> str:
    parts: list[str] = []
    for child in children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(_plain_text(child.children or []))  # the alt text
    return "".join(parts)


def _skipped_for_nesting(tokens: list[Token], index: int) -> bool:
    """True when markdown-it dropped this container's content for exceeding ``maxNesting``.

    markdown-it stops tokenizing a container's lines once the nesting level reaches the limit:
    the container opens and closes at once, with a line map over text it never looked at.
    """
    token = tokens[index]
    return (
        token.map is not None
        and token.level + 1 >= _BLOCK_PARSER.options["maxNesting"]
        and index + 1 < len(tokens)
        and tokens[index + 1].type == token.type.replace("_open", "_close")
    )


def _skipped_lines(text: str, lines: LineTable, container: Token) -> list[Block]:
    """One paragraph block per non-blank line of a skipped container, markers removed."""
    blocks: list[Block] = []
    first_line, end_line = container.map
    for line in range(first_line, min(end_line, len(lines))):
        start, end = lines.start(line), lines.end(line)
        markers = _CONTAINER_MARKERS_RE.match(text, start, end)
        blocks.extend(_block("paragraph", text, (markers.end() if markers else start, end)))
    return blocks


def _front_matter_lines(text: str, lines: LineTable) -> int:
    """How many lines a leading YAML front matter takes (both `---` lines included), 0 for none."""
    if len(lines) < 2 or text[: lines.end(0)].rstrip() != "---":
        return 0
    for line in range(1, len(lines)):
        if text[lines.start(line) : lines.end(line)].rstrip() in _FRONT_MATTER_CLOSERS:
            if not _looks_like_yaml(text[lines.start(1) : lines.start(line)]):
                return 0  # a page that opens with a thematic break: its text is content
            return line + 1
    return 0  # no closing line: not front matter, let markdown-it read it


def _without_front_matter(text: str, lines: LineTable, front: int) -> str:
    """The text with its FRONT lines of front matter replaced by as many empty lines."""
    return "\n" * front + text[lines.start(front) :] if front else text


def _front_matter_title(text: str, lines: LineTable, front: int) -> str | None:
    """The `title:` of the page's YAML front matter (its FRONT lines; a plain or quoted scalar)."""
    found = _FRONT_MATTER_TITLE_RE.search(text, 0, lines.start(front)) if front else None
    if found is None:
        return None
    value = found.group(1).strip()
    if value[0] in ">|" and set(value[1:]) <= set("+-0123456789"):  # a block scalar: the lines below
        value = found.group(2)
    elif len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return " ".join(value.split()) or None


def _looks_like_yaml(block: str) -> bool:
    """Front matter holds `key: value` lines (and list items, comments, continuations): a page
    that opened with `---` and prose lost everything to the next `---`."""
    lines = [line for line in block.splitlines() if line.strip()]
    return bool(lines) and re.match(r"^[\w\-. \"']+\s*:(\s|$)", lines[0]) is not None


def _block(kind: str, text: str, span: tuple[int, int] | None) -> list[Block]:
    """A block over the stripped span, or nothing when the span holds only whitespace."""
    if span is None:
        return []
    start, end = span
    segment = text[start:end]
    stripped = segment.strip()
    if not stripped:
        return []
    start += len(segment) - len(segment.lstrip())
    return [Block(kind, start, start + len(stripped))]


def _content_start(text: str, lines: LineTable, line: int, first_content_line: str) -> int:
    """Where a block's content starts on its first source line.

    markdown-it's content is the source line with container markers and indentation removed,
    i.e. a suffix of the line (trailing spaces aside). Tabs expanded to spaces can break that:
    then fall back to searching for it, then to the line start.
    """
    line_start = lines.start(line)
    source = text[line_start : lines.end(line)].rstrip()
    content = first_content_line.rstrip()
    if content and source.endswith(content):
        return line_start + len(source) - len(content)
    found = source.find(content.lstrip()) if content.strip() else -1
    return line_start + found if found >= 0 else line_start


def _paragraph_span(text: str, lines: LineTable, inline: Token) -> tuple[int, int] | None:
    if not inline.map:
        return None
    first_line, end_line = inline.map
    start = _content_start(text, lines, first_line, inline.content.split("\n", 1)[0])
    return start, lines.end(end_line - 1)


def _heading_span(
    text: str, lines: LineTable, heading: Token, inline: Token
) -> tuple[int, int] | None:
    """The heading text without markers: after the #'s (ATX) or above the underline (setext)."""
    if not inline.map or not inline.content:
        return None
    first_line, end_line = inline.map
    if heading.markup.startswith("#"):
        line_start = lines.start(first_line)
        source = text[line_start : lines.end(first_line)]
        after_marker = source.find(heading.markup) + len(heading.markup)
        found = source.find(inline.content, after_marker)
        if found < 0:
            return line_start + after_marker, line_start + len(source)
        return line_start + found, line_start + found + len(inline.content)
    start = _content_start(text, lines, first_line, inline.content.split("\n", 1)[0])
    return start, lines.end(end_line - 1)


def _html_table_end_line(text: str, lines: LineTable, html: Token) -> int:
    """The line after a raw HTML block, or after the </table> that closes a table it leaves open."""
    first_line, end_line = html.map
    block_end = lines.end(end_line - 1)
    depth = 0
    for tag in _HTML_TABLE_TAG_RE.finditer(text, lines.start(first_line), block_end):
        depth = max(0, depth + (-1 if tag.group(1) else 1))
    if depth == 0:
        return end_line
    for tag in _HTML_TABLE_TAG_RE.finditer(text, block_end):
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            return bisect.bisect_right(lines.starts, tag.start())
    return end_line  # never closed: the page's rest is not taken for a table


def _html_block(text: str, lines: LineTable, html: Token, containers: list[str], end_line: int) -> list[Block]:
    """The text of a raw HTML block (to END_LINE), without the list or quote markers of its lines."""
    first_line = html.map[0]
    start = _content_start(text, lines, first_line, html.content.split("\n", 1)[0])
    markers: list[tuple[int, int]] = []
    if "blockquote" in containers:
        for line in range(first_line + 1, min(end_line, len(lines))):
            quote = _QUOTE_MARKERS_RE.match(text, lines.start(line), lines.end(line))
            if quote and quote.end() > quote.start():
                markers.append((quote.start(), quote.end()))
    return html_text_blocks(text, start, lines.end(end_line - 1), markers=markers)


def _row_span(
    text: str, lines: LineTable, row: Token, containers: list[str]
) -> tuple[int, int]:
    line = row.map[0]
    start, end = lines.start(line), lines.end(line)
    if "blockquote" in containers:
        markers = _QUOTE_MARKERS_RE.match(text, start, end)
        if markers:
            start = markers.end()
    return start, end


def _code_span(lines: LineTable, code: Token) -> tuple[int, int]:
    first_line, end_line = code.map
    if code.type == "fence":
        # Content lines follow the opening fence; each ends with "\n" in token.content, which
        # tells where they stop whether or not a closing fence follows.
        first_line += 1
        end_line = first_line + code.content.count("\n")
    return lines.start(first_line), lines.end(end_line - 1)


def _is_html_comment(html: str) -> bool:
    """Only a comment: `<!-- a --> text <!-- b -->` also starts and ends like one, and its text
    was lost."""
    stripped = html.strip()
    return stripped.startswith("<!--") and stripped.endswith("-->") and stripped.find("-->") == len(stripped) - 3
