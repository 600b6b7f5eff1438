"""HTML -> sections of blocks, with BeautifulSoup (the stdlib ``html.parser`` backend).

HTML offsets are of no use to a reader, so the stored ``ParsedDocument.text`` is a plain text
built here: the text of each block, whitespace collapsed to single spaces (kept as is inside
``<pre>``), blocks joined by a blank line ("\\n\\n"), a list item after "- " indented two spaces
a nesting level. Block offsets point into that text.

Blocks: ``h1``-``h6`` (headings, they open sections), ``p``, ``li`` (list items: the blocks inside
one, its ``p``s and nested lists, are list items too), ``tr`` (table rows, cells joined by
" | "), ``pre`` (code; a ``<code>`` outside ``<pre>`` is inline code),
``blockquote``, ``dt``/``dd``, and any text sitting directly in other block containers (``div``,
``section``, ``body``...). Text before a nested block and text after it become separate blocks.
Dropped: ``script``, ``style``, ``nav``, ``noscript``, ``template``, ``svg``, ``iframe``,
``object``, ``title`` (it gives the document title when none is passed), comments. A page that
marks its main content (``<main>``, ``role="main"``) is read from it alone. ``<head>`` is
not dropped whole: html.parser leaves body text inside an unclosed ``<head>``.
Malformed HTML is parsed as well as html.parser can; it never fails on bad markup.
"""
from __future__ import annotations

from bs4 import BeautifulSoup
from bs4.element import NavigableString, PageElement, PreformattedString, Tag

from windowrag_pg.parse import (
    HTML_BLOCK_TAGS,
    HTML_DROPPED_TAGS,
    HeadingMark,
    build_sections,
    require_blocks,
)
from windowrag_pg.parse.types import Block, ParsedDocument

BLOCK_SEPARATOR = "\n\n"
LIST_MARKER = "- "
ROW_CELL_SEPARATOR = " | "

_HEADING_TAGS = {f"h{level}": level for level in range(1, 7)}
_LIST_ITEM_TAGS = frozenset({"li"})
_MAIN_MIN_CHARS = 1_000
_MAIN_MIN_SHARE = 0.2


class _BlockCollector:
    """Accumulates the built text and its blocks / heading marks in document order."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.items: list[Block | HeadingMark] = []
        self.first_title: str | None = None

    def add(self, kind: str, block_text: str, heading_level: int | None = None, marker: str = "") -> None:
        block_text = block_text.replace("\x00", "\ufffd")  # "&#0;" must not reach Postgres
        if not block_text.strip():
            return
        if self.parts:
            self.parts.append(BLOCK_SEPARATOR)
            self.length += len(BLOCK_SEPARATOR)
        self.parts.append(marker)  # before the block, not in it (a list item's "- ")
        self.length += len(marker)
        start = self.length
        self.parts.append(block_text)
        self.length += len(block_text)
        if heading_level is not None:
            self.items.append(HeadingMark(start, heading_level, block_text))
            if self.first_title is None and heading_level == 1:
                self.first_title = block_text
        # Blocks are stripped; keep offsets exact for text that starts or ends with whitespace.
        lead = len(block_text) - len(block_text.lstrip())
        self.items.append(Block(kind, start + lead, start + len(block_text.rstrip())))

    def text(self) -> str:
        return "".join(self.parts)


def parse_html(html: str, *, title: str | None = None) -> ParsedDocument:
    soup = BeautifulSoup(html, "html.parser")
    _drop_permalinks(soup)
    _space_breaks(soup)
    collector = _BlockCollector()
    _collect_blocks(_main_content(soup), collector)
    text = collector.text()
    sections = require_blocks(build_sections(len(text), collector.items), "html")
    if title is None:
        title = _title_tag_text(soup) or collector.first_title
    return ParsedDocument(text=text, sections=sections, title=title, format="html")


def _main_content(soup: BeautifulSoup) -> Tag:
    """The page's main content, when it marks one (a single ``<main>`` or ``role="main"`` holding
    a fifth of the page's text or 1,000 characters), else the whole page: a saved web page's
    header, menus, sidebars and footer are the same on every page of its site."""
    mains = soup.find_all("main") or soup.find_all(attrs={"role": "main"})
    if len(mains) != 1:
        return soup
    inside, everything = len(mains[0].get_text(" ", strip=True)), len(soup.get_text(" ", strip=True))
    return mains[0] if inside >= min(_MAIN_MIN_CHARS, _MAIN_MIN_SHARE * everything) else soup


def _drop_permalinks(soup: BeautifulSoup) -> None:
    """The "¶" links Sphinx and MkDocs put after each heading (class "headerlink"): they went into
    headings, section paths and contextual headers ("3. Python Packaging¶")."""
    for link in soup.find_all("a", class_="headerlink"):
        link.decompose()


def _space_breaks(soup: BeautifulSoup) -> None:
    """A space for each <br> and after each block inside a heading or a table cell, whose text is
    read whole: `<h2>Annual<br>Report</h2>` read "AnnualReport", `<td><p>Basic.</p><p>Cheap.</p>`
    "Basic.Cheap." (spaces are collapsed afterwards)."""
    for br in soup.find_all("br"):
        br.replace_with(" ")
    # One walk, each block spaced once: per holder, unclosed cells (nested by html.parser) gave
    # every block a space per enclosing cell, cubic work in all (found by a tester: a 10 KB
    # legacy table took 210 s).
    holders = {"td", "th", *_HEADING_TAGS}
    spaced: list[Tag] = []
    stack: list[tuple[Tag, bool]] = [(soup, False)]
    while stack:
        node, in_holder = stack.pop()
        if in_holder and node.name in HTML_BLOCK_TAGS:
            spaced.append(node)
        inner = in_holder or node.name in holders
        stack.extend((child, inner) for child in node.contents if isinstance(child, Tag))
    for block in spaced:
        block.append(" ")


def _collect_blocks(root: Tag, collector: _BlockCollector) -> None:
    """Walk the tree in document order (iteratively: malformed HTML can nest very deeply)."""
    pending: list[str] = []  # inline text of the innermost open block container
    # each open container, innermost last: "li" (a list item), "list_item" (a block inside one:
    # its <p>s and nested lists are the item's text), "paragraph"
    kinds = ["paragraph"]
    items_written: list[bool] = []  # for each open <li>: has a block of it been written yet
    # Stack of (node, closing): closing=True marks the end of a block container.
    stack: list[tuple[PageElement, bool]] = [(child, False) for child in reversed(root.contents)]

    def flush() -> None:
        if pending:
            # a list item is written as Markdown writes it, "- " indented two spaces a level (its
            # later paragraphs indented without the marker): the reader sees the list, and the
            # search tells a nested item's parent by the indents
            kind, marker = ("list_item", "") if kinds[-1] in ("li", "list_item") else (kinds[-1], "")
            if kind == "list_item" and items_written:
                depth = len(items_written)
                marker = "  " * depth if items_written[-1] else "  " * (depth - 1) + LIST_MARKER
                items_written[-1] = True
            collector.add(kind, _collapse_spaces("".join(pending)), marker=marker)
            pending.clear()

    while stack:
        node, closing = stack.pop()
        if closing:
            flush()
            if kinds.pop() == "li":
                items_written.pop()
            continue
        if isinstance(node, NavigableString):
            # Comments, doctypes, CDATA and processing instructions are PreformattedStrings.
            if not isinstance(node, PreformattedString):
                pending.append(str(node))
            continue
        if not isinstance(node, Tag):
            continue
        name = node.name.lower()
        if name in HTML_DROPPED_TAGS:
            continue
        if name == "br":
            pending.append(" ")
        elif name in _HEADING_TAGS:
            flush()
            heading = _collapse_spaces(node.get_text())
            collector.add("heading", heading, heading_level=_HEADING_TAGS[name])
        elif name == "pre":
            flush()
            collector.add("code", node.get_text().strip("\r\n"))
        elif name == "tr" and not _lays_out_a_page(node):
            flush()
            collector.add("table_row", _row_text(node))
        elif name == "tr":  # its cells hold the page: read as blocks (headings, paragraphs, code)
            flush()
            kinds.append("list_item" if kinds[-1] in ("li", "list_item") else "paragraph")
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.contents))
        elif name in HTML_BLOCK_TAGS:
            flush()
            if name in _LIST_ITEM_TAGS:
                kinds.append("li")
                items_written.append(False)
            else:
                kinds.append("list_item" if kinds[-1] in ("li", "list_item") else "paragraph")
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.contents))
        else:  # inline element: its text joins the running text
            stack.extend((child, False) for child in reversed(node.contents))
    flush()


def _lays_out_a_page(row: Tag) -> bool:
    """A row whose cells hold headings, preformatted blocks or tables lays out a page (old sites,
    generated API docs): read as one row, the whole page was one unit without its sections."""
    return row.find([*_HEADING_TAGS, "pre", "table"]) is not None


def _row_text(row: Tag) -> str:
    """Cell texts joined by " | ".

    Each string goes to its nearest enclosing cell: html.parser nests an unclosed ``<td>`` inside
    the previous one (``<td>a<td>b``), and a whole-cell ``get_text`` would then read "ab".
    """
    cell_texts: dict[int, list[str]] = {}
    if row.find_parent(HTML_DROPPED_TAGS) is not None:
        return ""
    # One walk down the row, each string with its nearest cell (looking each string's ancestors up
    # was cubic in nested unclosed cells: found by a tester)
    stack: list[tuple[PageElement, Tag | None]] = [(child, None) for child in reversed(row.contents)]
    while stack:
        node, cell = stack.pop()
        if isinstance(node, NavigableString):
            if not isinstance(node, PreformattedString):
                cell_texts.setdefault(id(cell) if cell is not None else id(row), []).append(str(node))
            continue
        if node.name in HTML_DROPPED_TAGS:
            continue
        inner = node if node.name in ("td", "th") else cell
        stack.extend((child, inner) for child in reversed(node.contents))
    texts = (_collapse_spaces("".join(parts)) for parts in cell_texts.values())
    return ROW_CELL_SEPARATOR.join(text for text in texts if text)


def _title_tag_text(soup: BeautifulSoup) -> str | None:
    tag = soup.find("title")
    if tag is None:
        return None
    return _collapse_spaces(tag.get_text()) or None


def _collapse_spaces(text: str) -> str:
    return " ".join(text.split())
