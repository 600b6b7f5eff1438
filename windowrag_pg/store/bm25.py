"""BM25 maintenance: when to pack a collection's postings, and packing it (sql/functions.sql,
windowrag.bm25_rebuild and bm25_pack_recent). Incremental writes add postings as rows (fast to
insert, ~20x the bytes of packed ones); a full pack recounts the statistics from the sentences and
rewrites every posting of the collection into impact-ordered blocks; a recent pack (migration
0021) rewrites only the postings written since the last full pack, into a second tier of blocks.
Packing is worth it when the rows are a sizeable share of what is packed."""
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
# A recent pack while the recent tier, with the rows, stays under this share of the first tier;
# a full pack beyond it (each posting is then rewritten ~5 times over a collection's growth
# instead of ~11; docs/performance.md), and whenever deleted sentences left stale postings,
# which only a full pack drops.
RECENT_SHARE = 0.5


def pack_due(pending: int, stale: int, packed: int, *, share: float = PACK_SHARE,
             min_postings: int = PACK_MIN_POSTINGS) -> bool:
    """True when the unpacked rows and stale postings justify rewriting the collection's blocks."""
    return pending + stale >= max(min_postings, share * packed)


def pack_kind(pending: int, stale: int, packed: int, recent: int, *,
              recent_share: float = RECENT_SHARE) -> str | None:
    """None when no pack is due, else "recent" (only what was written since the last full pack)
    or "full"."""
    if not pack_due(pending, stale, packed):
        return None
    if stale or recent + pending >= recent_share * (packed - recent):
        return "full"
    return "recent"


def rebuild_bm25(conn: psycopg.Connection, collection: Collection) -> int:
    """Recount the collection's BM25 statistics and pack all its postings, in one transaction
    without a statement timeout (a minute or so per million sentences). Needs the owner's role.
    Returns the number of postings packed."""
    with conn.transaction():
        conn.execute(load_sql("no_statement_timeout_local"))
        return conn.execute(load_sql("bm25_rebuild"), [collection.id]).fetchone()[0]


def pack_counts(conn: psycopg.Connection, collection: Collection) -> tuple[int, int, int, int] | None:
    """The collection's posting counters, what pack_kind decides from: (as rows, stale, packed, of
    the packed those in the recent tier); None before its first posting."""
    row = conn.execute(load_sql("bm25_pack_state"), [collection.id]).fetchone()
    return None if row is None else tuple(row)


def pack_recent(conn: psycopg.Connection, collection: Collection) -> int:
    """Pack the postings written since the collection's last full pack into its recent tier (a
    full pack when it never had one), in one transaction without a statement timeout. Needs the
    owner's role. Returns the number of postings in the recent tier."""
    with conn.transaction():
        conn.execute(load_sql("no_statement_timeout_local"))
        return conn.execute(load_sql("bm25_pack_recent"), [collection.id]).fetchone()[0]


def pack_if_due(conn: psycopg.Connection, collection: Collection) -> bool:
    """Pack the collection when pack_kind says so, the way it says; True when it did."""
    counts = pack_counts(conn, collection)
    kind = None if counts is None else pack_kind(*counts)
    if kind == "full":
        rebuild_bm25(conn, collection)
    elif kind == "recent":
        pack_recent(conn, collection)
    return kind is not None
