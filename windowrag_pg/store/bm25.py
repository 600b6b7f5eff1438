"""BM25 maintenance: when to pack a collection's postings, and packing it (sql/functions.sql,
windowrag.bm25_rebuild). Incremental writes add postings as rows (fast to insert, ~20× the
bytes of packed ones); a pack recounts the statistics from the sentences and rewrites every
posting of the collection into impact-ordered blocks, so it is worth running when the rows are
a sizeable share of what is packed."""
from __future__ import annotations

from typing import TYPE_CHECKING

import psycopg

from ..db.sqlfiles import load_sql

if TYPE_CHECKING:  # store.collections calls rebuild_bm25 after a bulk load
    from .collections import Collection

# Pack when the posting rows (and stale packed postings of deleted sentences) reach this share
# of the packed postings, and at least PACK_MIN_POSTINGS: a pack rewrites the whole collection,
# so each posting is rewritten ~1/PACK_SHARE times over the collection's growth.
PACK_SHARE = 0.10
PACK_MIN_POSTINGS = 50_000


def pack_due(pending: int, stale: int, packed: int, *, share: float = PACK_SHARE,
             min_postings: int = PACK_MIN_POSTINGS) -> bool:
    """True when the unpacked rows and stale postings justify rewriting the collection's blocks."""
    return pending + stale >= max(min_postings, share * packed)


def rebuild_bm25(conn: psycopg.Connection, collection: Collection) -> int:
    """Recount the collection's BM25 statistics and pack all its postings, in one transaction
    without a statement timeout (a minute or so per million sentences). Needs the owner's role.
    Returns the number of postings packed."""
    with conn.transaction():
        conn.execute(load_sql("no_statement_timeout_local"))
        return conn.execute(load_sql("bm25_rebuild"), [collection.id]).fetchone()[0]


def pack_counts(conn: psycopg.Connection, collection: Collection) -> tuple[int, int, int] | None:
    """The collection's posting counters: (as rows, stale, packed); None before its first posting."""
    row = conn.execute(load_sql("bm25_pack_due"), [collection.id]).fetchone()
    return None if row is None else tuple(row)


def pack_if_due(conn: psycopg.Connection, collection: Collection) -> bool:
    """Pack the collection when pack_due says so; True when it did."""
    counts = pack_counts(conn, collection)
    if counts is None or not pack_due(*counts):
        return False
    rebuild_bm25(conn, collection)
    return True
