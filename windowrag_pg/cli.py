"""The `windowrag` command line: ingest, query, delete, stats, db-url, demo, server-stop."""
from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from typing import Any

from .config import DEFAULT_COLLECTION


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return args.handler(args) or 0
    except KeyboardInterrupt:
        return 130
    except (ValueError, RuntimeError, LookupError) as exc:  # our errors carry readable messages
        print(f"windowrag: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        import psycopg

        if not isinstance(exc, psycopg.Error):
            raise
        diag = getattr(exc, "diag", None)
        message = (diag.message_primary if diag is not None and diag.message_primary else str(exc)).strip()
        print(f"windowrag: database error: {message}", file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="windowrag", description="Sentence-window retrieval in Postgres.")
    parser.add_argument("--database-url", help="Postgres URL (default: $WINDOWRAG_DATABASE_URL, else the embedded server)")
    sub = parser.add_subparsers(title="commands")

    p = sub.add_parser("ingest", help="ingest files, folders or JSON lines")
    p.add_argument("paths", nargs="+")
    p.add_argument("--collection", default=DEFAULT_COLLECTION)
    p.add_argument("--embedder", default=None, help="embedding model (default: offline ONNX BGE-small)")
    p.add_argument("--contextual-headers", action="store_true",
                   help="embed 'title › section path: sentence' (a collection setting, fixed at creation)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(handler=cmd_ingest)

    p = sub.add_parser("query", help="search a collection: retrieve, rerank, RSE, assemble")
    p.add_argument("query")
    p.add_argument("--k", type=int, default=5, help="at most this many contexts (default 5)")
    p.add_argument("--token-budget", type=int, default=None,
                   help="tokens all contexts may hold together (default 1024; 0: no budget)")
    p.add_argument("--selection", default=None, choices=["segments", "windows"],
                   help="segments (default): the most valuable runs of sentences within the budget; "
                        "windows: fixed ±--window windows, cut to the budget")
    p.add_argument("--min-relevance", type=float, default=None,
                   help="return nothing when the best answer's relevance (0-1) is below this "
                        "(default: the library's calibrated threshold; 0 never abstains)")
    p.add_argument("--window", type=int, default=3, help="with --selection windows: sentences each side")
    p.add_argument("--mode", default="hybrid", choices=["hybrid", "dense", "bm25"])
    p.add_argument("--candidates", type=int, default=20, help="candidates per list (dense, BM25) before fusion")
    p.add_argument("--clamp", default="section", choices=["section", "document"])
    p.add_argument("--rerank", action=argparse.BooleanOptionalAction, default=None,
                   help="rerank windows with the cross-encoder (default: off, see docs/evaluation.md)")
    p.add_argument("--rerank-candidates", type=int, default=None, help="windows to rerank")
    p.add_argument("--rerank-token-budget", type=int, default=None,
                   help="tokens the cross-encoder reads in all (it scores windows in retrieval order while they fit; "
                        "default 1500, about 0.5 s on 2 cores)")
    p.add_argument("--rerank-tokens", type=int, default=None,
                   help="tokens of each window the cross-encoder reads (whole sentences around the hits)")
    p.add_argument("--rse", default=None, help="RSE preset: balanced, precision, find_all or none")
    p.add_argument("--max-sentences", type=int, default=None,
                   help="sentences the retrieved windows may hold together (default: no budget)")
    p.add_argument("--order", default="score", choices=["score", "document"])
    p.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                   help="metadata.KEY=V, document_id=ID, source=S; also >=, <=, >, <")
    p.add_argument("--collection", default=DEFAULT_COLLECTION)
    p.add_argument("--embedder", default=None)
    p.add_argument("--reranker", default=None)
    p.add_argument("--json", action="store_true", help="print JSON (with the trace under \"trace\")")
    p.add_argument("--explain", action="store_true", help="print every stage's decisions")
    p.set_defaults(handler=cmd_query)

    p = sub.add_parser("delete", help="delete a document (by external id) with its sections and sentences")
    p.add_argument("document_id")
    p.add_argument("--collection", default=DEFAULT_COLLECTION)
    p.set_defaults(handler=cmd_delete)

    p = sub.add_parser("stats", help="counts per collection")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_stats)

    p = sub.add_parser("db-url", help="print the database URL (starts the embedded server if needed)")
    p.set_defaults(handler=cmd_db_url)

    from .evaluation.cli import add_eval_parser

    add_eval_parser(sub)

    p = sub.add_parser("doctor", help="check the server, pgvector, indexes and BM25 statistics")
    p.set_defaults(handler=cmd_doctor)

    p = sub.add_parser("server-stop", help="stop the embedded server")
    p.set_defaults(handler=cmd_server_stop)

    p = sub.add_parser("demo", help="ingest the bundled sample and run a query")
    p.add_argument("query", nargs="?", default="How much does the company pay towards dental insurance?")
    p.set_defaults(handler=cmd_demo)
    return parser


def _connect(args, *, autocommit: bool = True):
    from .db.connection import connect

    return connect(args.database_url, autocommit=autocommit)


def cmd_ingest(args) -> int:
    from tqdm import tqdm

    from .embed import get_embedder
    from .ingest import Ingestor
    from .sources import iter_sources

    sources = list(iter_sources(args.paths))
    with _connect(args) as conn:
        ingestor = Ingestor(conn, collection=args.collection, embedder=get_embedder(args.embedder),
                            contextual_headers=args.contextual_headers)
        with tqdm(total=len(sources), unit="doc", disable=None, file=sys.stderr) as bar:
            def on_document(name: str, status: str, units: int) -> None:
                bar.update(1)
                bar.set_postfix_str(f"{status}: {name}"[:60])
            report = ingestor.ingest(sources, on_document=on_document)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        _print_ingest_report(report)
    return 1 if report.errors and report.documents == 0 else 0


def _print_ingest_report(report) -> None:
    print(
        f"{report.documents} documents ({report.added} added, {report.replaced} replaced, "
        f"{report.unchanged} unchanged), {report.sections} sections, {report.sentences} sentences "
        f"in {report.seconds:.1f} s ({report.sentences_per_second:.0f} sentences/s)"
    )
    for error in report.errors:
        print(f"error: {error.name}: {error.message}", file=sys.stderr)


def cmd_query(args) -> int:
    from .embed import get_embedder
    from .pipeline import Pipeline, PipelineOptions
    from .retrieve.filters import parse_cli_filter

    filters: dict[str, Any] = {}
    for expression in args.filter:
        key, condition = parse_cli_filter(expression)
        if isinstance(condition, dict) and isinstance(filters.get(key), dict):
            filters[key].update(condition)
        else:
            filters[key] = condition
    defaults = PipelineOptions()
    options = PipelineOptions(
        k=args.k, window=args.window, mode=args.mode, candidates=args.candidates, clamp=args.clamp,
        rerank=defaults.rerank if args.rerank is None else args.rerank,
        rerank_candidates=args.rerank_candidates or defaults.rerank_candidates,
        rerank_tokens=args.rerank_tokens or defaults.rerank_tokens,
        rerank_token_budget=args.rerank_token_budget or defaults.rerank_token_budget,
        rse=defaults.rse if args.rse is None else (None if args.rse.lower() == "none" else args.rse),
        token_budget=(defaults.token_budget if args.token_budget is None else (args.token_budget or None)),
        selection=args.selection or defaults.selection,
        min_relevance=defaults.min_relevance if args.min_relevance is None else args.min_relevance,
        order=args.order, max_sentences=args.max_sentences,
    )
    reranker = None
    if options.rerank and args.reranker:
        from .rerank import get_reranker

        reranker = get_reranker(args.reranker)
    with _connect(args) as conn:
        pipeline = Pipeline(conn, collection=args.collection, embedder=get_embedder(args.embedder), reranker=reranker)
        result = pipeline.run(args.query, options, filters=filters or None)
    if args.json:
        print(json.dumps(result.as_dict(), ensure_ascii=False, indent=2, default=str))
        return 0
    if args.explain:
        from .explain import print_trace

        print_trace(result)
    _print_contexts(result)
    return 0


def _print_contexts(result) -> None:
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    console = Console()
    if result.abstained:
        console.print(f"no relevant context ({result.trace.get('abstain')})")
    for number, context in enumerate(result.contexts, start=1):
        # Text(), not markup: document text and ids may hold [brackets]
        title = Text(f"[{number}] {context.citation.label()} — score {context.score:.3f}")
        console.print(Panel(Text(context.text), title=title, title_align="left"))


def cmd_delete(args) -> int:
    from .store.collections import get_collection
    from .store.writer import delete_document

    with _connect(args) as conn:
        deleted = delete_document(conn, get_collection(conn, args.collection), args.document_id)
    if not deleted:
        print(f"windowrag: no document {args.document_id!r} in collection {args.collection!r}", file=sys.stderr)
        return 1
    print(f"deleted {args.document_id}")
    return 0


def cmd_stats(args) -> int:
    from .store.collections import list_collection_stats

    with _connect(args) as conn:
        rows = list_collection_stats(conn)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table("collection", "model", "dim", "unit", "documents", "sections", "sentences", "lexemes")
    for row in rows:
        table.add_row(*(str(row[key]) for key in ("collection", "embedding_model", "dimension", "unit",
                                                  "documents", "sections", "sentences", "lexemes")))
    Console().print(table)
    return 0


def cmd_db_url(args) -> int:
    from .db.connection import database_url

    with _connect(args):  # make sure the schema exists before someone opens psql
        pass
    print(database_url(args.database_url))
    return 0


def cmd_doctor(args) -> int:
    from rich.console import Console

    from .doctor import run_checks

    console = Console()
    with _connect(args) as conn:
        checks = run_checks(conn)
    for check in checks:
        mark = "[green]ok[/green]  " if check.ok else "[red]FAIL[/red]"
        console.print(f"{mark} {check.name}: {check.detail}" + (f"\n      fix: {check.fix}" if check.fix else ""))
    failed = sum(not c.ok for c in checks)
    console.print(f"{len(checks) - failed} ok, {failed} failed")
    return 1 if failed else 0


def cmd_server_stop(args) -> int:
    from .db.embedded import stop_embedded

    print("stopped" if stop_embedded() else "no embedded server was running")
    return 0


def cmd_demo(args) -> int:
    from .ingest import Ingestor
    from .pipeline import Pipeline
    from .sources import SourceDocument

    sample_dir = resources.files("windowrag_pg.samples")
    samples = [
        SourceDocument(external_id=f"samples/{p.name}", format="markdown", text=p.read_text(encoding="utf-8"))
        for p in sorted(sample_dir.iterdir(), key=lambda p: p.name) if p.name.endswith(".md")
    ]
    with _connect(args) as conn:
        ingestor = Ingestor(conn, collection="demo")
        report = ingestor.ingest(samples)
        _print_ingest_report(report)
        pipeline = Pipeline(conn, collection="demo", embedder=ingestor.embedder)
        result = pipeline.search(args.query, k=3, window=2)
    print(f"\nquery: {args.query}\n")
    _print_contexts(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
