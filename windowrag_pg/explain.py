"""Render a pipeline trace readably (`windowrag query --explain`)."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def print_trace(result, console: Console | None = None) -> None:
    console = console or Console()
    trace = result.trace
    if "segments" in trace:
        _print_segment_trace(trace, console)
    else:
        _print_window_trace(trace, console)
    sent = Table(title="Contexts sent", title_justify="left")
    for column in ("#", "document", "sentences", "tokens", "score"):
        sent.add_column(column)
    for position, row in enumerate(trace["contexts"], start=1):
        sent.add_row(str(position), escape(row["document_id"]), f"{row['first_ordinal']}–{row['last_ordinal']}",
                     str(row["tokens"]), f"{row['score']:.3f}")
    console.print(sent)
    if trace.get("abstain"):
        console.print(f"abstained: {escape(trace['abstain'])}")
    timings = "  ".join(f"{stage} {ms:.1f} ms" for stage, ms in trace["timings_ms"].items())
    console.print(f"timings: {timings}")


def _print_segment_trace(trace, console: Console) -> None:
    options = trace["options"]
    console.print(f"{trace['candidates']} candidate sentences valued; relevance {trace['relevance']:.3f}"
                  f" (min_relevance {options['min_relevance']}); token budget {options['token_budget']}, "
                  f"at most {options['k']} segments")
    verification = trace.get("verification")
    if verification:
        scores = ", ".join(f"{score:.4f}" for score in verification["scores"])
        console.print(f"relevance below verify_below {options.get('verify_below')}: the cross-encoder scored the "
                      f"best sentences {scores} (verify_min_score {options.get('verify_min_score')})")
    chosen = Table(title="Segments chosen (summed sentence values within the budget)", title_justify="left")
    for column in ("document", "sentences", "tokens", "value"):
        chosen.add_column(column)
    for row in trace["segments"]:
        chosen.add_row(escape(row["document_id"]), f"{row['first_ordinal']}–{row['last_ordinal']}",
                       str(row["tokens"]), f"{row['value']:.3f}")
    console.print(chosen)


def _print_window_trace(trace, console: Console) -> None:
    retrieval = Table(title="1. Retrieval: fused hits and merged windows", title_justify="left")
    for column in ("#", "document", "section", "sentences", "RRF", "hits (ordinal: dense/BM25 rank)"):
        retrieval.add_column(column)
    for window in trace["retrieval"]:
        hits = ", ".join(f"{h['sentence_ordinal']}: {h['dense_rank'] or '–'}/{h['bm25_rank'] or '–'}"
                         for h in window["hits"])
        retrieval.add_row(str(window["rank"] + 1), escape(window["document_id"]), escape(" › ".join(window["section_path"])),
                          f"{window['first_ordinal']}–{window['last_ordinal']}", f"{window['rrf_score']:.4f}",
                          hits + (f"  (merged {window['merged_hits']})" if window["merged_hits"] > 1 else ""))
    console.print(retrieval)
    if trace.get("rerank"):
        rerank = Table(title="2. Rerank (cross-encoder probability)", title_justify="left")
        for column in ("new #", "was #", "document", "first sentence", "score"):
            rerank.add_column(column)
        for position, row in enumerate(trace["rerank"], start=1):
            rerank.add_row(str(position), str(row["retrieval_rank"] + 1), escape(row["document_id"]),
                           str(row["first_ordinal"]), f"{row['score']:.3f}")
        console.print(rerank)
    if trace.get("rse"):
        rse = Table(title=f"3. RSE: {trace['rse']['sentences_valued']} sentences valued", title_justify="left")
        for column in ("segment", "document", "sentences", "value"):
            rse.add_column(column)
        for position, row in enumerate(trace["rse"]["segments"], start=1):
            rse.add_row(str(position), escape(row["document_id"]), f"{row['first_ordinal']}–{row['last_ordinal']}",
                        f"{row['value']:.3f}")
        console.print(rse)
