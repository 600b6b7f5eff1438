"""Every limit of a search, defined once.

The CLI (help texts and checks), the Python API (SearchOptions, PipelineOptions, collection
names) and the SQL functions (sql/limits.sql: windowrag.search_limits() and
windowrag.check_search_limits(...)) enforce these same numbers with the same message, which
names the limit; tests/test_limits.py checks that the SQL table equals LIMITS.
Pure: no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limit:
    name: str
    low: int
    high: int
    what: str  # how the message names the value
    why: str


LIMITS: dict[str, Limit] = {limit.name: limit for limit in (
    Limit("k", 1, 1000, "k", "contexts returned"),
    Limit("candidates", 1, 1000, "candidates",
          "sentences per list (dense, BM25) before fusion; pgvector's hnsw.ef_search tops out at 1000"),
    Limit("ef_search", 1, 1000, "ef_search", "pgvector's hnsw.ef_search tops out at 1000"),
    Limit("rrf_k", 1, 10_000, "rrf_k", "the Reciprocal Rank Fusion constant"),
    Limit("window", 0, 100, "window", "sentences each side of a hit: 100 already sends 201 sentences a hit"),
    Limit("max_sentences", 1, 10_000, "max_sentences", "sentences the retrieved windows hold together"),
    # A query reaches Postgres as one OR-ed tsquery node per word, which the server evaluates
    # recursively: ~17,000 words exceed the default 2 MB max_stack_depth. 20,000 characters
    # hold at most 10,000 words.
    Limit("query_chars", 1, 20_000, "the query's length in characters",
          "longer queries overflow the server's stack in full-text matching"),
    Limit("collection_name", 1, 200, "a collection name's length in characters", "the collections table's CHECK"),
    # Python-only stages (no SQL counterpart):
    Limit("rerank_candidates", 1, 1000, "rerank_candidates", "windows retrieved for the cross-encoder (as k)"),
    Limit("rerank_tokens", 1, 10_000, "rerank_tokens", "tokens of each window the cross-encoder reads"),
    Limit("rerank_token_budget", 1, 100_000, "rerank_token_budget", "tokens the cross-encoder reads in all"),
    Limit("token_budget", 1, 100_000, "token_budget",
          "tokens of all returned contexts; None in Python, 0 on the command line: no budget"),
)}
SQL_LIMITS = ("k", "candidates", "ef_search", "rrf_k", "window", "max_sentences", "query_chars", "collection_name")
# Contexts returned in all when no token_budget is set are cut to this many tokens (the
# pipeline says so in its trace): one merged window of long sentences can otherwise run to
# hundreds of thousands of tokens.
MAX_RETURNED_TOKENS = LIMITS["token_budget"].high


def problem(name: str, value: object) -> str | None:
    """Why VALUE breaks limit NAME (a message naming the limit), or None when it is within."""
    limit = LIMITS[name]
    if not isinstance(value, int) or isinstance(value, bool):
        return f"{limit.what} must be a whole number from {limit.low} to {limit.high}, not {value!r} (limit {name})"
    if not limit.low <= value <= limit.high:
        kind = "an integer " if limit.what == name else ""
        return (f"{limit.what} must be {kind}from {limit.low} to {limit.high}, not {value} "
                f"(limit {name}: {limit.why})")
    return None


def first_problem(**values: object) -> str | None:
    """The first limit broken by NAME=VALUE pairs; None values are not set, hence not checked."""
    for name, value in values.items():
        if value is not None:
            found = problem(name, value)
            if found:
                return found
    return None


def describe(name: str) -> str:
    """'from LOW to HIGH' for help texts."""
    limit = LIMITS[name]
    return f"{limit.low}–{limit.high}"
