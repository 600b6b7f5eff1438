"""Contexts that hold rows of raw HTML tables in Markdown: how many begin or end inside a row, and
how many send rows of a table whose first row (its header) no context sends.

    windowrag ingest ../shared/eval/handbook/documents.jsonl --collection handbook
    python benchmarks/html_table_rows.py --collection handbook --documents ../shared/eval/handbook/documents.jsonl
    python benchmarks/html_table_rows.py --collection handbook --documents ../shared/eval/handbook/documents.jsonl \
        --queries ../shared/eval/squad-dev/queries.jsonl --limit 200

Markdown pages exported from Google Docs hold their tables as raw HTML (<table><tr><td>...). Run
it on a collection ingested before a parser change and on one ingested after, with the same
queries: the pipeline's defaults, abstention off (every query gets its contexts). A context's
text is the document's own characters, so it is read back from the documents file by its
citation. A context "begins inside a row" when a cell of its row with text lies before it, "ends
inside a row" when one lies after it. A report, not a timed test.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heading_values import argument_parser, open_collection  # noqa: E402  (a sibling script)

_CELL_RE = re.compile(r"<t[dh][\s>]", re.IGNORECASE)
_CELL_END_RE = re.compile(r"</t[dh]>", re.IGNORECASE)
_TAG_RE = re.compile(r"<[^>]*>")


def holds_table_markup(text: str) -> bool:
    return bool(_CELL_RE.search(text) or _CELL_END_RE.search(text))


def has_cell_text(markup: str) -> bool:
    """MARKUP holds a cell with text in it."""
    return bool(_CELL_RE.search(markup)) and bool(_TAG_RE.sub("", markup).strip())


def begins_inside_a_row(text: str, start: int) -> bool:
    row_open, row_close = text.rfind("<tr", 0, start), text.rfind("</tr>", 0, start)
    return row_open > row_close and has_cell_text(text[row_open:start])


def ends_inside_a_row(text: str, end: int) -> bool:
    row_ends = [at for at in (text.find("</tr>", end), text.find("<tr", end)) if at >= 0]
    return has_cell_text(text[end:min(row_ends, default=len(text))])


def first_row(text: str, at: int) -> tuple[int, int] | None:
    """The first row of the table that the characters from AT on are in (None: not in one)."""
    table = text.rfind("<table", 0, at + 1)
    if table < 0 or text.rfind("</table>", 0, at + 1) > table:
        return None
    row = text.find("<tr", table)
    return (row, text.find("</tr>", row)) if row >= 0 else None


def measure(contexts: list, documents: dict[str, str]) -> dict[str, int]:
    counts = {"contexts": len(contexts), "with table rows": 0, "begin inside a row": 0,
              "end inside a row": 0, "without the table's first row": 0}
    sent = [(c.citation.document_id, c.citation.start_char, c.citation.end_char, c.citation.lead_start_char)
            for c in contexts]
    for context in contexts:
        citation = context.citation
        text = documents[citation.document_id]
        if not holds_table_markup(text[citation.start_char:citation.end_char]):
            continue
        counts["with table rows"] += 1
        counts["begin inside a row"] += begins_inside_a_row(text, citation.start_char)
        counts["end inside a row"] += ends_inside_a_row(text, citation.end_char)
        # the table the run's last character is in (a run can begin above its table)
        header = first_row(text, citation.end_char - 1)
        if header and not any(
            document == citation.document_id and (start <= header[1] and end >= header[0]
                                                  or lead is not None and header[0] <= lead <= header[1])
            for document, start, end, lead in sent
        ):
            counts["without the table's first row"] += 1
    return counts


def main() -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--documents", type=Path, required=True,
                        help="the JSON lines the collection was ingested from (id, text)")
    parser.add_argument("--limit", type=int, default=None, help="the first N queries")
    args = parser.parse_args()
    _, pipeline, _, queries = open_collection(args)
    queries = queries[: args.limit]
    with args.documents.open(encoding="utf-8") as lines:
        documents = {row["id"]: row["text"] for row in map(json.loads, filter(str.strip, lines))}
    print(f"{len(queries)} queries of {args.queries} on {args.collection}; abstention off\n")
    print("| budget | contexts | with HTML table rows | begin inside a row | end inside a row | without the table's first row |")
    print("|---:|---:|---:|---:|---:|---:|")
    for budget in (int(b) for b in args.budgets.split(",")):
        totals: dict[str, int] = {}
        for query in queries:
            result = pipeline.search(query, token_budget=budget, min_relevance=None)
            for name, count in measure(result.contexts, documents).items():
                totals[name] = totals.get(name, 0) + count
        print(f"| {budget:,} | " + " | ".join(str(count) for count in totals.values()) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
