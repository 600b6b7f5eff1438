"""The `windowrag` command line: ingest, query, delete, stats, db-url, demo, server-stop."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from .config import DEFAULT_COLLECTION
from .limits import LIMITS, describe


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
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as other commands do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141
    except (ValueError, RuntimeError, LookupError) as exc:  # our errors carry readable messages
        print(f"windowrag: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        import psycopg

        if not isinstance(exc, psycopg.Error):
            raise
        print(f"windowrag: database error: {database_error_message(exc)}", file=sys.stderr)
        return 1


def database_error_message(exc) -> str:
    """The server's message, and for a cancelled statement the timeout in force: PostgreSQL may
    report a statement timeout as a cancel "due to user request" (when it reaches a parallel
    worker first), so the message alone does not always say which it was."""
    import psycopg

    from .config import STATEMENT_TIMEOUT_ENV, TRANSACTION_POOLER_ENV, behind_transaction_pooler, statement_timeout_ms

    diag = getattr(exc, "diag", None)
    message = (diag.message_primary if diag is not None and diag.message_primary else str(exc)).strip()
    if isinstance(exc, psycopg.errors.QueryCanceled):
        if behind_transaction_pooler():  # the library set none: the role's or the server's
            message += f" (the role's or server's statement_timeout: {TRANSACTION_POOLER_ENV} is on)"
        else:
            message += f" (the statement timeout is {statement_timeout_ms()} ms: {STATEMENT_TIMEOUT_ENV})"
    return message


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="windowrag", description="Sentence-window retrieval in Postgres.")
    parser.add_argument("--database-url", help="Postgres URL (default: $WINDOWRAG_DATABASE_URL, else the embedded server)")
    sub = parser.add_subparsers(title="commands")

    p = sub.add_parser("ingest", help="ingest files, folders or JSON lines")
    p.add_argument("paths", nargs="+")
    p.add_argument("--collection", default=DEFAULT_COLLECTION)
    p.add_argument("--embedder", default=None,
                   help="embedding model (default: the collection's own model; a new one: offline ONNX BGE-small)")
    p.add_argument("--contextual-headers", action=argparse.BooleanOptionalAction, default=None,
                   help="embed each sentence as 'title › section path: sentence' (a collection setting, fixed "
                        "at creation; default: the collection's own, on for a new collection)")
    p.add_argument("--bulk", action=argparse.BooleanOptionalAction, default=None,
                   help="--bulk: write the rows without the collection's HNSW index and build it once at the end "
                        "(several times faster for large loads; on a collection that holds documents its index is "
                        "dropped and rebuilt, and its searches are exact sequential scans until then); "
                        "--no-bulk: update the index document by document. Default: bulk when more than "
                        "10 inputs go into an empty collection (or one whose index an interrupted bulk load left missing)")
    p.add_argument("--vector-index", choices=("halfvec", "binary"), default=None,
                   help="what a new collection's HNSW index is built on (fixed at creation; default halfvec): "
                        "binary indexes three bits a dimension of the centred embeddings and re-ranks with the "
                        "stored vectors, ~720 fewer bytes a sentence for a slower dense search (docs/performance.md)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(handler=cmd_ingest)

    from .evaluation.cli import min_relevance_arg

    p = sub.add_parser("query", help="search a collection: retrieve, rerank, RSE, assemble")
    p.add_argument("query")
    p.add_argument("--k", type=int, default=5, help=f"at most this many contexts (default 5; {describe('k')})")
    p.add_argument("--token-budget", type=int, default=None,
                   help=f"tokens all contexts may hold together (default 1200; 0: no budget; at most {LIMITS['token_budget'].high})")
    p.add_argument("--selection", default=None, choices=["segments", "windows", "value_windows"],
                   help="segments (default): the most valuable runs of sentences within the budget; "
                        "windows: fixed ±--window windows, cut to the budget; value_windows: "
                        "±--window windows around the most valuable sentences (RSE off, for comparison)")
    p.add_argument("--min-relevance", type=min_relevance_arg, default=None, metavar="P",
                   help="return nothing when the best answer's relevance (0-1) is below this "
                        "(default: the library's calibrated threshold; 'none' never abstains)")
    p.add_argument("--verify-below", type=min_relevance_arg, default=None, metavar="P",
                   help="relevance from --min-relevance up to this is checked by the cross-encoder on the "
                        "two best sentences, each with its neighbours (default 0.50, 30-75 ms when it runs; "
                        "'none': the relevance model alone)")
    p.add_argument("--verify-min-score", type=float, default=None, metavar="P",
                   help="the cross-encoder's probability (0-1) one of those passages must reach (default 0.011)")
    p.add_argument("--sentence-floor", type=float, default=None, metavar="F",
                   help="price of a sentence, as a share of the query's best sentence value per 32 tokens: "
                        "sentences worth less are not sent (default 0: the budget is filled, which measured best "
                        "at equal budgets; 0-10)")
    p.add_argument("--window", type=int, default=3, help=f"with --selection windows or value_windows: sentences each side ({describe('window')})")
    p.add_argument("--mode", default="hybrid", choices=["hybrid", "dense", "bm25"])
    p.add_argument("--candidates", type=int, default=20, help=f"candidates per list (dense, BM25) before fusion ({describe('candidates')})")
    p.add_argument("--ef-search", type=int, default=None,
                   help=f"HNSW candidates the dense search walks (default 100; {describe('ef_search')}): 400 finds "
                        "~0.99 of the exact nearest at 100k sentences for ~2x the statement's time (docs/performance.md)")
    p.add_argument("--clamp", default="section", choices=["section", "document"])
    p.add_argument("--rerank", action=argparse.BooleanOptionalAction, default=None,
                   help="rerank windows with the cross-encoder (default: off, see docs/evaluation.md)")
    p.add_argument("--rerank-candidates", type=int, default=None, help=f"windows to rerank ({describe('rerank_candidates')})")
    p.add_argument("--rerank-token-budget", type=int, default=None,
                   help="tokens the cross-encoder reads in all (it scores windows in retrieval order while they fit; "
                        f"default 1500, about 0.5 s on 2 cores; {describe('rerank_token_budget')})")
    p.add_argument("--rerank-tokens", type=int, default=None,
                   help="tokens of each window the cross-encoder reads (whole sentences around the hits; "
                        f"{describe('rerank_tokens')}; default 384)")
    p.add_argument("--rse", default=None, help="RSE preset: balanced, precision, find_all or none")
    p.add_argument("--max-sentences", type=int, default=None,
                   help=f"sentences the retrieved windows may hold together ({describe('max_sentences')}; default: no budget)")
    p.add_argument("--order", default="score", choices=["score", "document"])
    p.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                   help="metadata.KEY=V, document_id=ID, source=S; also >=, <=, >, <; repeated: keys AND-ed, "
                        "one key's values OR-ed, its ranges AND-ed")
    p.add_argument("--collection", default=DEFAULT_COLLECTION)
    p.add_argument("--embedder", default=None,
                   help="embed the query with this model (default: the model the collection was embedded with)")
    p.add_argument("--reranker", default=None,
                   help="the cross-encoder of --rerank (default: offline ONNX ms-marco MiniLM-L12; or a Hugging Face "
                        "name); naming one turns --rerank on unless --no-rerank is given")
    p.add_argument("--json", action="store_true", help="print JSON (with the trace under \"trace\")")
    p.add_argument("--explain", action="store_true", help="print every stage's decisions")
    p.set_defaults(handler=cmd_query)

    p = sub.add_parser("embed-query", help="print a query's embedding as a pgvector literal (for psql)")
    p.add_argument("query")
    p.add_argument("--collection", default=None,
                   help="embed with this collection's model (default: the default embedder)")
    p.add_argument("--embedder", default=None)
    p.set_defaults(handler=cmd_embed_query)

    p = sub.add_parser("delete", help="delete a document (by id, or a file's path) with its sections and sentences")
    p.add_argument("document_id", help="the document's id, or the path of an ingested file (typed any way)")
    p.add_argument("--collection", default=DEFAULT_COLLECTION)
    p.set_defaults(handler=cmd_delete)

    p = sub.add_parser("documents", help="list the documents of a collection: ids, titles, sources, sentences")
    p.add_argument("--collection", default=DEFAULT_COLLECTION)
    p.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                   help="as for query: metadata.KEY=V, document_id=ID, source=S (the file path); also >=, <=, >, <")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_documents)

    p = sub.add_parser("delete-collection", help="delete a collection with all its documents")
    p.add_argument("name")
    p.set_defaults(handler=cmd_delete_collection)

    p = sub.add_parser("reembed", help="move a collection to another embedding model (re-embed in place)")
    p.add_argument("name")
    p.add_argument("--embedder", required=True, help="the new embedding model (bge-small-en, or a Hugging Face name)")
    p.set_defaults(handler=cmd_reembed)

    p = sub.add_parser("stats", help="counts per collection")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_stats)

    p = sub.add_parser("db-url", help="print the database URL (starts the embedded server if needed)")
    p.set_defaults(handler=cmd_db_url)

    from .evaluation.cli import add_eval_parser

    add_eval_parser(sub)

    p = sub.add_parser("doctor", help="check the server, pgvector, indexes and BM25 statistics")
    p.add_argument("--fix", action="store_true",
                   help="build each collection's missing or invalid HNSW index (left by an interrupted bulk load) "
                        "with CREATE INDEX CONCURRENTLY, recount BM25 statistics that disagree with the sentences "
                        "and pack posting rows that are due, "
                        "then check again")
    p.add_argument("--recall", metavar="COLLECTION", default=None,
                   help="also measure the dense search's recall@5 on COLLECTION against an exact scan of its "
                        "vectors, at each --ef-search (the exact scan reads every sentence of the collection "
                        "for each query: 45 ms at 50,000 sentences here, in proportion above)")
    p.add_argument("--recall-queries", metavar="FILE", type=Path, default=None,
                   help="with --recall: questions, one a line, embedded with the collection's model "
                        "(default: --recall-sample sentences of the collection asked as queries)")
    p.add_argument("--recall-sample", type=_positive_int, default=50, help="with --recall: sentences asked (50)")
    p.add_argument("--ef-search", type=_ef_searches, default=(100, 200, 400),
                   help="with --recall: hnsw.ef_search values, comma-separated (100,200,400)")
    p.set_defaults(handler=cmd_doctor)

    p = sub.add_parser("native-install",
                       help="build and install the optional windowrag_native extension (BM25 sums in C; needs make and cc)")
    p.add_argument("--pg-config", type=Path, default=None,
                   help="pg_config of the server to install into (default: the embedded server's)")
    p.set_defaults(handler=cmd_native_install)

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
    from .ingest import Ingestor, IngestReport
    from .parse import max_document_bytes
    from .sources import SourceError, iter_sources

    max_document_bytes()  # a bad $WINDOWRAG_MAX_DOCUMENT_BYTES once, not once per document
    sources = list(iter_sources(args.paths))
    if sources and all(isinstance(source, SourceError) for source in sources):
        report = IngestReport(errors=sources)  # nothing readable: no collection is made for it
    else:
        with _connect(args) as conn:
            embedder = get_embedder(args.embedder) if args.embedder else None  # None: the collection's own model
            ingestor = Ingestor(conn, collection=args.collection, embedder=embedder,
                                contextual_headers=args.contextual_headers, bulk=args.bulk,
                                vector_index=args.vector_index)
            with tqdm(total=len(sources), unit="doc", disable=None, file=sys.stderr) as bar, \
                    tqdm(unit=" sentences embedded", disable=None, file=sys.stderr) as embedded, \
                    _stop_on_ctrl_c() as stop:
                def on_document(name: str, status: str, units: int) -> None:
                    bar.update(1)
                    bar.set_postfix_str(f"{status}: {name}"[:60])
                report = ingestor.ingest(sources, on_document=on_document, on_units=embedded.update,
                                         should_stop=stop.is_set)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        _print_ingest_report(report)
    if report.interrupted:
        print(f"windowrag: interrupted: the {_count(report.documents, 'document')} above are stored, "
              "the rest were not ingested (run the same command again to go on)", file=sys.stderr)
        return 130
    return 1 if report.errors else 0  # after the summary: a script must see that an input failed


@contextlib.contextmanager
def _stop_on_ctrl_c():
    """The first Ctrl-C (SIGINT) asks the ingest to stop after the document it is writing; it never
    lands inside a database call, so a transaction or COPY is never cut half-way. A second one
    exits at once: the server rolls back the open transaction, if any, when the connection drops."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():  # only the main thread gets signals
        yield stop
        return

    def on_sigint(signum, frame) -> None:
        if stop.is_set():
            print("\nwindowrag: aborted (the document being written, if any, is rolled back)", file=sys.stderr)
            os._exit(130)
        stop.set()
        print("\nwindowrag: stopping after the current document (Ctrl-C again to abort at once)", file=sys.stderr)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def _ef_searches(text: str) -> tuple[int, ...]:
    """--ef-search 100,200,400, each within LIMITS["ef_search"]."""
    values = []
    for part in text.split(","):
        value = _positive_int(part.strip())
        if value > LIMITS["ef_search"].high:
            raise argparse.ArgumentTypeError(f"{value} is above {LIMITS['ef_search'].high}, "
                                             "pgvector's largest hnsw.ef_search")
        values.append(value)
    return tuple(dict.fromkeys(values))


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(f"windowrag: cannot read {path}: {exc}") from None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _print_ingest_report(report) -> None:
    print(
        f"{_count(report.documents, 'document')} ({report.added} added, {report.replaced} replaced, "
        f"{report.metadata_updated} metadata updated, {report.unchanged} unchanged), "
        f"{_count(report.sections, 'section')}, {_count(report.sentences, 'sentence')} "
        f"in {report.seconds:.1f} s ({report.sentences_per_second:.0f} sentences/s)"
        + (f"; bulk load, HNSW index built in {report.index_seconds:.1f} s" if report.bulk else "")
    )
    for warning in report.warnings:
        print(f"warning: {warning.name}: {warning.message}", file=sys.stderr)
    for error in report.errors:
        print(f"error: {error.name}: {error.message}", file=sys.stderr)


def _cli_filters(expressions: list[str]) -> dict[str, Any]:
    from .retrieve.filters import combine_cli_filters, parse_cli_filter

    conditions = []
    for expression in expressions:
        key, condition = parse_cli_filter(expression)
        if key == "source" and isinstance(condition, str) and Path(condition).exists():
            # a file's path typed any way, as ingest stored it (absolute, symlinks resolved), or as
            # typed: a framework's document keeps the source it was given (a relative path too)
            resolved = str(Path(condition).resolve())
            condition = resolved if resolved == condition else {"in": [condition, resolved]}
        conditions.append((key, condition))
    return combine_cli_filters(conditions)


def cmd_query(args) -> int:
    from .config import read_database_url_from_env
    from .db.source import read_source
    from .embed import get_embedder
    from .pipeline import Pipeline, PipelineOptions
    from .segment.rse import PRESETS as RSE_PRESETS

    filters = _cli_filters(args.filter)
    defaults = PipelineOptions()
    if args.rse is not None and args.rse.lower() != "none" and args.rse not in RSE_PRESETS:
        raise ValueError(f"--rse must be one of {', '.join(sorted(RSE_PRESETS))} or none, not {args.rse!r}")
    if args.token_budget is not None and args.token_budget < 0:  # (PipelineOptions knows no 0)
        raise ValueError(f"--token-budget must be 0 (no budget) or from 1 to {LIMITS['token_budget'].high}, "
                         f"not {args.token_budget}")
    options = PipelineOptions(
        k=args.k, window=args.window, mode=args.mode, candidates=args.candidates, clamp=args.clamp,
        ef_search=_given(args.ef_search, defaults.ef_search),
        # a reranker named is one the user wants used
        rerank=(bool(args.reranker) or defaults.rerank) if args.rerank is None else args.rerank,
        rerank_candidates=_given(args.rerank_candidates, defaults.rerank_candidates),
        rerank_tokens=_given(args.rerank_tokens, defaults.rerank_tokens),
        rerank_token_budget=_given(args.rerank_token_budget, defaults.rerank_token_budget),
        rse=defaults.rse if args.rse is None else (None if args.rse.lower() == "none" else args.rse),
        token_budget=(defaults.token_budget if args.token_budget is None else (args.token_budget or None)),
        selection=args.selection or defaults.selection,
        min_relevance=_given_or_none(args.min_relevance, defaults.min_relevance),
        verify_below=_given_or_none(args.verify_below, defaults.verify_below),
        verify_min_score=_given(args.verify_min_score, defaults.verify_min_score),
        order=args.order, max_sentences=args.max_sentences,
        sentence_floor=_given(args.sentence_floor, defaults.sentence_floor),
    )
    reranker = None
    if options.rerank and args.reranker:
        from .rerank import get_reranker

        reranker = get_reranker(args.reranker)
    embedder = get_embedder(args.embedder) if args.embedder else None  # None: the collection's own model
    read_url = None if args.database_url else read_database_url_from_env()
    if read_url:  # queries go to the replica, as windowrag_pg.search sends them (the Configuration table)
        pipeline = Pipeline(read_source(read_url), collection=args.collection, embedder=embedder, reranker=reranker)
        result = pipeline.run(args.query, options, filters=filters or None)
    else:
        with _connect(args) as conn:
            pipeline = Pipeline(conn, collection=args.collection, embedder=embedder, reranker=reranker)
            result = pipeline.run(args.query, options, filters=filters or None)
    for note in result.trace.get("notes", []):
        print(f"windowrag: note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps(result.as_dict(), ensure_ascii=False, indent=2, default=str))
        return 0
    if args.explain:
        from .explain import print_trace

        print_trace(result)
    _print_contexts(result)
    return 0


def _given(value, default):
    """The option's value when given (0 included: the limits check refuses it by name), else the default."""
    return default if value is None else value


def _given_or_none(value, default):
    """_given for options that take 'none' (min_relevance_arg): None then."""
    return None if value == "none" else _given(value, default)


def _table_console():
    """A terminal's width on a terminal; elsewhere (a pipe, a file) tables as wide as their cells:
    ids cut to "/work/main/wind…" cannot be passed to `windowrag delete`."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=100_000)


# Control characters of stored text shown as escapes: an ESC in a document, title or id would
# otherwise reach the terminal (found by a tester: OSC 52 clipboard writes, cursor moves that
# forged lines, a cleared screen). Line breaks and tabs stay in text, not in one-line fields.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LINE_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def shown(text: str, *, one_line: bool = False) -> str:
    """TEXT as printed: control characters as escapes (\\x1b), line breaks too when ONE_LINE."""
    pattern = _LINE_CONTROL_RE if one_line else _CONTROL_RE
    return pattern.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


def _print_contexts(result) -> None:
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    console = Console()
    if result.abstained:
        console.print(f"no relevant context ({result.trace.get('abstain')})", markup=False)
    for number, context in enumerate(result.contexts, start=1):
        heading = shown(f"[{number}] {context.citation.label()} — score {context.score:.3f}", one_line=True)
        text = shown(context.text)
        if not sys.stdout.isatty():  # to a file or a pipe: whole lines, no box cut at 80 columns
            print(f"{heading}\n{text}\n")
            continue
        # Text(), not markup: document text and ids may hold [brackets]
        console.print(Panel(Text(text), title=Text(heading), title_align="left"))


def cmd_embed_query(args) -> int:
    from .embed import get_embedder
    from .retrieve.retriever import check_embedding, check_query

    model = args.embedder
    if args.collection is not None:
        from .store.collections import get_collection

        with _connect(args) as conn:
            model = model or get_collection(conn, args.collection).embedding_model
    embedder = get_embedder(model)
    vector = check_embedding(embedder.embed_query(check_query(args.query)), embedder.dimension)
    # repr of float32 → shortest text that reads back to the same float32
    print("[" + ",".join(repr(float(x)) for x in vector) + "]")
    return 0


def cmd_delete(args) -> int:
    from .store.collections import get_collection
    from .store.writer import delete_document

    from .sources import file_document_id

    document_id = args.document_id
    with _connect(args) as conn:
        collection = get_collection(conn, args.collection)
        deleted = delete_document(conn, collection, document_id)
        if not deleted and file_document_id(document_id) != document_id:
            # a file's path typed any way (relative, through a symlink), also once the file is gone
            document_id = file_document_id(document_id)
            deleted = delete_document(conn, collection, document_id)
    if not deleted:
        print(f"windowrag: no document {args.document_id!r} in collection {args.collection!r}", file=sys.stderr)
        return 1
    print(f"deleted {document_id}")
    return 0


def cmd_documents(args) -> int:
    from .store.collections import get_collection
    from .store.documents import list_documents, unmatched_filters

    filters = _cli_filters(args.filter) or None
    with _connect(args) as conn:
        collection = get_collection(conn, args.collection)
        rows = list_documents(conn, collection, filters=filters)
        notes = unmatched_filters(conn, collection, filters) if not rows else []
    for note in notes:
        print(f"windowrag: note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False, default=str))
        return 0
    from rich.table import Table
    from rich.text import Text

    table = Table("id", "title", "source", "sentences", "sections")
    for row in rows:
        # Text(), not markup: ids, titles and sources may hold [brackets] ("[draft]" vanished)
        table.add_row(*(Text(shown(str(row[key]), one_line=True)) if row[key] is not None else ""
                        for key in ("id", "title", "source", "sentences", "sections")))
    _table_console().print(table)
    print(f"{_count(len(rows), 'document')} in {args.collection!r}")
    return 0


def cmd_delete_collection(args) -> int:
    from .store.collections import delete_collection, may_index_sentences

    with _connect(args) as conn:
        documents = delete_collection(conn, args.name)
        index_left = not may_index_sentences(conn)
        role = conn.info.user
    print(f"deleted collection {args.name!r} ({_count(documents, 'document')})")
    if index_left:
        print(f"windowrag: role {role!r} may not drop indexes: the collection's vector index (over no rows) "
              "is left for the schema's owner to drop (`windowrag doctor --fix` as the owner)", file=sys.stderr)
    return 0


def cmd_reembed(args) -> int:
    from tqdm import tqdm

    from .embed import get_embedder
    from .reembed import reembed_collection

    embedder = get_embedder(args.embedder)
    with _connect(args) as conn, tqdm(unit=" sentences embedded", disable=None, file=sys.stderr) as bar:
        count = reembed_collection(conn, args.name, embedder, on_units=bar.update)
    print(f"collection {args.name!r}: {count} sentences embedded with {embedder.model_id} ({embedder.dimension}-d)")
    return 0


def cmd_stats(args) -> int:
    from .store.collections import list_collection_stats

    with _connect(args) as conn:
        rows = list_collection_stats(conn)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.table import Table
    from rich.text import Text

    table = Table("collection", "model", "dim", "unit", "documents", "sections", "sentences", "lexemes")
    for row in rows:  # Text(), not markup: a collection named "[red]x" was shown as "x"
        table.add_row(*(Text(str(row[key])) for key in ("collection", "embedding_model", "dimension", "unit",
                                                        "documents", "sections", "sentences", "lexemes")))
    _table_console().print(table)
    return 0


def cmd_db_url(args) -> int:
    from .db.connection import database_url

    with _connect(args):  # make sure the schema exists before someone opens psql
        pass
    print(database_url(args.database_url))
    return 0


def cmd_doctor(args) -> int:
    from rich.console import Console
    from rich.markup import escape

    from .doctor import (
        centre_indexes, check_may_repair, drop_orphan_indexes, fill_missing_gaps, repair_bm25, repair_indexes,
        repair_native, repair_owner_only_functions, run_checks,
    )
    from .store.collections import get_collection

    console = Console()
    if args.recall is None:
        given = [flag for flag, value, default in (("--recall-queries", args.recall_queries, None),
                                                   ("--recall-sample", args.recall_sample, 50),
                                                   ("--ef-search", args.ef_search, (100, 200, 400)))
                 if value != default]
        if given:
            raise SystemExit(f"windowrag doctor: {', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} "
                             "with --recall COLLECTION")
    with _connect(args) as conn:
        # a wrong name is said before the checks run, not after
        recall_collection = get_collection(conn, args.recall) if args.recall is not None else None
        if args.fix:
            check_may_repair(conn)
            for function in repair_owner_only_functions(conn):
                console.print(f"fixed owner-only function {function}: EXECUTE revoked from PUBLIC and the windowrag_* roles",
                              markup=False)
            for index in drop_orphan_indexes(conn):
                console.print(f"fixed vector index {index} of a deleted collection: dropped", markup=False)
            for name in repair_indexes(conn):
                console.print(f"fixed HNSW index of {name!r}: built (its BM25 statistics recounted and packed first)", markup=False)
            for name in centre_indexes(conn):
                console.print(f"fixed HNSW index of {name!r}: rebuilt centred on its rows", markup=False)
            for name in repair_bm25(conn):
                console.print(f"fixed BM25 statistics of {name!r}: recounted and packed", markup=False)
            for name in fill_missing_gaps(conn):
                console.print(f"fixed text between sentences of {name!r}: read from the documents", markup=False)
            if repair_native(conn):
                console.print("fixed BM25 sums in C: CREATE EXTENSION windowrag_native")
        checks = run_checks(conn)
        for check in checks:
            # a check that passes with something to do (an optional part missing, a slower path)
            # is a note: "ok … fix:" read as a contradiction
            mark = "[red]FAIL[/red]" if not check.ok else "[yellow]note[/yellow]" if check.fix else "[green]ok[/green]  "
            advice = "fix" if not check.ok else "to do"
            console.print(mark + escape(f" {check.name}: {check.detail}" + (f"\n      {advice}: {check.fix}" if check.fix else "")))
        failed = sum(not c.ok for c in checks)
        notes = sum(c.ok and bool(c.fix) for c in checks)
        console.print(f"{len(checks) - failed - notes} ok, {notes} note{'s' * (notes != 1)}, {failed} failed")
        if recall_collection is not None:
            _print_recall(console, conn, recall_collection, args)
    return 1 if failed else 0


def _print_recall(console, conn, collection, args) -> None:
    from .doctor import dense_recall
    from .embed import get_embedder

    embeddings = None
    if args.recall_queries is not None:
        questions = [line.strip() for line in _read_text(args.recall_queries).splitlines() if line.strip()]
        if not questions:
            raise SystemExit(f"windowrag doctor: {args.recall_queries}: no question in it (one a line)")
        embedder = get_embedder(collection.embedding_model)
        embeddings = [embedder.embed_query(question) for question in questions]
    result = dense_recall(conn, collection.name, ef_searches=args.ef_search, sample=args.recall_sample,
                          query_embeddings=embeddings)
    asked = (f"{result.queries} of its sentences asked as queries (each left out of its own results)"
             if result.own_sentences else f"{result.queries} questions of {args.recall_queries}")
    console.print(f"dense recall@{result.k} of {result.collection!r} against an exact scan ({result.exact_ms:.1f} ms "
                  f"a query), {asked}:", markup=False)
    for ef_search in args.ef_search:
        console.print(f"  ef_search {ef_search:>4}: recall@{result.k} {result.recall[ef_search]:.3f}, "
                      f"dense_search {result.dense_ms[ef_search]:.1f} ms (median)")


def cmd_native_install(args) -> int:
    from .db.native import NativeBuildError, install_native

    try:
        libdir = install_native(args.pg_config)
    except NativeBuildError as exc:
        print(f"windowrag: {exc}", file=sys.stderr)
        return 1
    print(f"installed windowrag_native into {libdir}; databases migrated from now on create it, "
          "existing ones with `windowrag doctor --fix` (or CREATE EXTENSION windowrag_native)")
    return 0


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
