"""`windowrag eval`: run one configuration over an evaluation set and print its metrics.

    windowrag eval --documents D.jsonl --queries Q.jsonl [--config NAME|FILE] [--limit N] [--seed S] [--json]
                   [--token-budget N | --budgets 256,512,...] [--out-of-corpus scoped|unscoped]

Registered by windowrag_pg.cli with ``add_eval_parser(sub)``.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .presets import PRESETS
from .runner import OUT_OF_CORPUS

# rows of the human table: (label, metric key, format)
TABLE_ROWS = (
    ("hit@1", "hit@1", "{:.3f}"),
    ("hit@3", "hit@3", "{:.3f}"),
    ("hit@5", "hit@5", "{:.3f}"),
    ("answer hit@5", "answer_hit@5", "{:.3f}"),
    ("evidence recall@5", "evidence_recall@5", "{:.3f}"),
    ("MRR", "mrr", "{:.3f}"),
    ("wrong section@1", "wrong_section@1", "{:.3f}"),
    ("tokens mean", "tokens_mean", "{:,.0f}"),
    ("tokens p95", "tokens_p95", "{:,.0f}"),
    ("duplicated tokens", "duplicated_tokens", "{:,.0f}"),
    ("abstain rate", "abstain_rate", "{:.3f}"),
    ("over budget", "over_budget_rate", "{:.3f}"),
    ("latency p50 (ms)", "latency_ms_p50", "{:,.1f}"),
    ("latency p95 (ms)", "latency_ms_p95", "{:,.1f}"),
)


def add_eval_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the `eval` subcommand on an argparse subparsers object."""
    p = subparsers.add_parser(
        "eval", help="evaluate a retrieval configuration on a labelled set (JSON lines)",
        description="Ingest the documents into the configuration's own collection (unchanged documents "
                    "are skipped), run a fixed-seed sample of the queries, print hit@k, evidence recall, "
                    "MRR, tokens sent and latency.")
    p.add_argument("--documents", required=True, help="documents.jsonl ({id, title, text, format, metadata})")
    p.add_argument("--queries", required=True, help="queries.jsonl ({id, query, gold, answers, scope_doc_id})")
    p.add_argument("--config", default="full",
                   help=f"a preset ({', '.join(PRESETS)}) or a JSON configuration file (default: full)")
    p.add_argument("--limit", type=int, default=None, help="evaluate a sample of N queries (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed of the query sample (default: 0)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--token-budget", type=token_budget_arg, default=None, metavar="N",
                        help="token budget of every query, for any preset (chunk baselines included): "
                             "overrides the configuration's; 0 or 'none': no budget")
    budget.add_argument("--budgets", type=budgets_arg, default=None, metavar="B1,B2,...",
                        help="a recall-vs-budget curve: the configuration once per token budget (one "
                             "ingestion, the same queries), one row per budget")
    p.add_argument("--min-relevance", type=min_relevance_arg, default=None, metavar="P",
                   help="abstain below this relevance (0-1), for any pipeline preset: overrides the "
                        "configuration's; 'none': never abstain")
    p.add_argument("--verify-below", type=min_relevance_arg, default=None, metavar="P",
                   help="relevance from min_relevance up to this is checked by the cross-encoder: overrides "
                        "the configuration's; 'none': the relevance model alone")
    p.add_argument("--out-of-corpus", choices=OUT_OF_CORPUS, default=None,
                   help="the queries are another set's, asked of these documents (their gold is dropped: "
                        "only the abstain rate counts): 'scoped' searches each in one document chosen by "
                        "--seed (as a per-contract set is searched), 'unscoped' the whole collection")
    p.add_argument("--embedder", default=None,
                   help="embedding model of the documents and queries (default: offline ONNX BGE-small; or a "
                        "Hugging Face name or folder, with the 'hf' extra): its own collection, eval_..._<model>")
    p.add_argument("--rows", action="store_true", help="with --json: include one row per query")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=cmd_eval)
    return p


_NO_BUDGET = "none"  # --token-budget none / --min-relevance none


def token_budget_arg(text: str) -> int | str:
    """--token-budget: a positive integer, or 0 / 'none' for no budget (as `windowrag query`)."""
    if text.strip().lower() == _NO_BUDGET:
        return _NO_BUDGET
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--token-budget must be an integer or 'none', not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"--token-budget must be positive (0: no budget), not {value}")
    return value or _NO_BUDGET


def min_relevance_arg(text: str) -> float | str:
    """--min-relevance / --verify-below: a number in [0, 1], or 'none'."""
    if text.strip().lower() == _NO_BUDGET:
        return _NO_BUDGET
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1] or 'none', not {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], not {value}")
    return value


def budgets_arg(text: str) -> list[int]:
    """--budgets: comma-separated positive integers, e.g. 256,512,700."""
    budgets = []
    for part in text.split(","):
        try:
            value = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--budgets must be comma-separated integers, not {part.strip()!r} "
                                             f"in {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"--budgets must be positive, not {value} in {text!r}")
        budgets.append(value)
    return budgets


def cmd_eval(args) -> int:
    from ..db.connection import connect
    from ..embed import get_embedder
    from .presets import get_config
    from .runner import run_curve, run_eval

    config = get_config(args.config)
    if args.token_budget is not None:
        config = config.replace(token_budget=None if args.token_budget == _NO_BUDGET else args.token_budget)
    if args.min_relevance is not None:
        config = config.replace(min_relevance=None if args.min_relevance == _NO_BUDGET else args.min_relevance)
    if args.verify_below is not None:
        config = config.replace(verify_below=None if args.verify_below == _NO_BUDGET else args.verify_below)
    common = dict(documents_path=args.documents, queries_path=args.queries, config=config, limit=args.limit,
                  seed=args.seed, progress=not args.json or sys.stderr.isatty(), keep_rows=args.rows,
                  out_of_corpus=args.out_of_corpus, embedder=get_embedder(args.embedder))
    with connect(getattr(args, "database_url", None), autocommit=True) as conn:
        if args.budgets:
            result = run_curve(conn, budgets=args.budgets, **common)
        else:
            result = run_eval(conn, **common)
    if result.get("queries_left_out"):
        print(f"windowrag: note: {result['queries_left_out']} queries left out: their gold documents are not "
              f"among {args.documents}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    else:
        print(format_curve(result) if "curve" in result else format_result(result))
    return 0


def _heading(result: dict[str, Any]) -> str:
    asked = (f" · out-of-corpus: {result['queries_dataset']} queries ({result['out_of_corpus']})"
             if result.get("out_of_corpus") else "")
    left_out = (f" · {result['queries_left_out']} queries left out (their documents are not among these)"
                if result.get("queries_left_out") else "")
    return (f"{result['dataset']} · config {result['config']} · {result['n_queries']} queries "
            f"(seed {result.get('seed')}) · collection {result.get('collection')}{asked}{left_out}")


def format_result(result: dict[str, Any]) -> str:
    metrics = result["metrics"]
    budget = result.get("token_budget")
    lines = [_heading(result) + (f" · token budget {budget}" if budget else "")]
    width = max(len(label) for label, _, _ in TABLE_ROWS)
    for label, key, fmt in TABLE_ROWS:
        value = metrics.get(key)
        if value is None:
            continue
        lines.append(f"  {label:<{width}}  {fmt.format(value)}")
    load = (result.get("load") or {}).get("after") or {}
    if load:
        lines.append(f"  (load average {load.get('loadavg_1m')} on {load.get('cores')} cores)")
    return "\n".join(lines)


# columns of the curve table: (header, metric key, format)
CURVE_COLUMNS = (
    ("budget", None, "{:>6}"),
    ("hit@1", "hit@1", "{:.3f}"),
    ("hit@5", "hit@5", "{:.3f}"),
    ("ev.rec@5", "evidence_recall@5", "{:.3f}"),
    ("wrong sec@1", "wrong_section@1", "{:.3f}"),
    ("tokens mean", "tokens_mean", "{:,.0f}"),
    ("tokens p95", "tokens_p95", "{:,.0f}"),
    ("over budget", "over_budget_rate", "{:.3f}"),
    ("abstain", "abstain_rate", "{:.3f}"),
    ("p50 ms", "latency_ms_p50", "{:,.1f}"),
)


def format_curve(result: dict[str, Any]) -> str:
    """One row per token budget."""
    rows = [[header for header, _, _ in CURVE_COLUMNS]]
    for point in result["curve"]:
        metrics = point["metrics"]
        cells = [str(point["token_budget"])]
        for _, key, fmt in CURVE_COLUMNS[1:]:
            value = metrics.get(key)
            cells.append("–" if value is None else fmt.format(value))
        rows.append(cells)
    widths = [max(len(row[i]) for row in rows) for i in range(len(CURVE_COLUMNS))]
    lines = [_heading(result)]
    lines += ["  " + "  ".join(cell.rjust(width) for cell, width in zip(row, widths)) for row in rows]
    load = (result.get("load") or {}).get("after") or {}
    if load:
        lines.append(f"  (load average {load.get('loadavg_1m')} on {load.get('cores')} cores)")
    return "\n".join(lines)
