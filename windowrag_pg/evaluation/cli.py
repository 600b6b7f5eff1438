"""`windowrag eval`: run one configuration over an evaluation set and print its metrics.

    windowrag eval --documents D.jsonl --queries Q.jsonl [--config NAME|FILE] [--limit N] [--seed S] [--json]

Registered by windowrag_pg.cli with ``add_eval_parser(sub)``.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .presets import PRESETS

# rows of the human table: (label, metric key, format)
TABLE_ROWS = (
    ("hit@1", "hit@1", "{:.3f}"),
    ("hit@3", "hit@3", "{:.3f}"),
    ("hit@5", "hit@5", "{:.3f}"),
    ("answer hit@5", "answer_hit@5", "{:.3f}"),
    ("evidence recall@5", "evidence_recall@5", "{:.3f}"),
    ("MRR", "mrr", "{:.3f}"),
    ("tokens mean", "tokens_mean", "{:,.0f}"),
    ("tokens p95", "tokens_p95", "{:,.0f}"),
    ("duplicated tokens", "duplicated_tokens", "{:,.0f}"),
    ("abstain rate", "abstain_rate", "{:.3f}"),
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
    p.add_argument("--rows", action="store_true", help="with --json: include one row per query")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=cmd_eval)
    return p


def cmd_eval(args) -> int:
    from ..db.connection import connect
    from .presets import get_config
    from .runner import run_eval

    config = get_config(args.config)
    with connect(getattr(args, "database_url", None), autocommit=True) as conn:
        result = run_eval(conn, documents_path=args.documents, queries_path=args.queries, config=config,
                          limit=args.limit, seed=args.seed, progress=not args.json or sys.stderr.isatty(),
                          keep_rows=args.rows)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    else:
        print(format_result(result))
    return 0


def format_result(result: dict[str, Any]) -> str:
    metrics = result["metrics"]
    lines = [f"{result['dataset']} · config {result['config']} · {result['n_queries']} queries "
             f"(seed {result.get('seed')}) · collection {result.get('collection')}"]
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
