"""Collections: a named set of documents embedded with one model."""
from __future__ import annotations

import hashlib
import time
import warnings
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg import sql

from ..config import behind_transaction_pooler
from ..db.connection import same_server
from ..db.sqlfiles import load_sql
from ..limits import problem
from .bm25 import rebuild_bm25


class CollectionError(ValueError):
    """A collection cannot be used as asked (unknown, or built with another model)."""


# Embeddings are stored as halfvec and each collection has an HNSW index on them, which pgvector
# builds for at most 4,000 dimensions (collections.dimension has the same bound, migration 0010).
MAX_INDEXED_DIMENSION = 4000
# What a collection's HNSW index is built on (a collection setting, fixed at creation; migration
# 0012): "halfvec", the embeddings themselves; "binary", bits of them (index_key: three a
# dimension since 0023), with the nearest re-ranked by the stored halfvec: ~720 fewer bytes a
# sentence at 384-d for a slower dense search at about the same recall (docs/performance.md).
VECTOR_INDEXES = ("halfvec", "binary")
# A new collection embeds "title › section path: sentence" unless told otherwise (embed/headers.py).
DEFAULT_CONTEXTUAL_HEADERS = True


def check_dimension(embedding_model: str, dimension: int) -> int:
    """DIMENSION when a collection of EMBEDDING_MODEL's vectors can be indexed; else CollectionError."""
    if not 1 <= dimension <= MAX_INDEXED_DIMENSION:
        raise CollectionError(
            f"model {embedding_model!r} makes {dimension}-dimensional embeddings; a collection's HNSW index "
            f"(halfvec) takes 1 to {MAX_INDEXED_DIMENSION:,} dimensions: use a model of at most "
            f"{MAX_INDEXED_DIMENSION:,} dimensions")
    return dimension


@dataclass(frozen=True, slots=True)
class Collection:
    id: int
    name: str
    embedding_model: str
    dimension: int
    contextual_headers: bool
    ts_config: str
    unit: str
    chunk_tokens: int | None
    vector_index: str = "halfvec"  # VECTOR_INDEXES


def check_collection_name(name: object) -> str:
    """NAME when it is a usable collection name; else CollectionError naming the limit."""
    if not isinstance(name, str):
        raise CollectionError(f"a collection name must be a string, not {type(name).__name__}")
    found = problem("collection_name", len(name))
    if found:
        raise CollectionError(f"collection name {name[:40]!r}{'…' if len(name) > 40 else ''}: {found}")
    return name


def get_collection(conn: psycopg.Connection, name: str) -> Collection:
    check_collection_name(name)
    return collection_from_row(name, conn.execute(load_sql("get_collection"), [name]).fetchone())


def collection_from_row(name: str, row) -> Collection:
    """The collection of a get_collection row (None: it does not exist)."""
    if row is None:
        # row-level security hides other tenants' collections (a service role without
        # windowrag.tenant set sees none): the hint names both cases
        raise CollectionError(f"collection {name!r} does not exist (ingest documents into it first) or this role's "
                              "tenant cannot see it (a windowrag_service role sets windowrag.tenant: docs/tenancy.md)")
    return Collection(*row)


def ensure_collection(
    conn: psycopg.Connection,
    name: str,
    *,
    embedding_model: str,
    dimension: int,
    contextual_headers: bool | None = None,
    unit: str = "sentence",
    chunk_tokens: int | None = None,
    tenant: str | None = None,
    index: bool = True,
    vector_index: str | None = None,
) -> Collection:
    """Get or create NAME; refuse a model, dimension or unit other than the collection's own.

    CONTEXTUAL_HEADERS: None takes the collection's own setting (True for a new collection).

    TENANT (docs/tenancy.md): a new collection is created in it ('default' when None); an
    existing one must belong to it (any tenant when None). A tenant role sees only its tenants'
    collections, so for it another tenant's collection "does not exist".
    """
    check_collection_name(name)
    check_dimension(embedding_model, dimension)
    if vector_index is not None and vector_index not in VECTOR_INDEXES:
        raise CollectionError(f"vector_index must be one of {', '.join(VECTOR_INDEXES)}, not {vector_index!r}")
    if conn.execute(load_sql("get_collection"), [name]).fetchone() is None:
        if not name.strip() or any(ord(c) < 32 or ord(c) == 127 for c in name):
            # (existing names stay usable: this is checked only when one is created)
            raise CollectionError(f"collection name {name!r}: a new collection's name must have a visible "
                                  "character and no control characters (tabs, newlines)")
        headers = DEFAULT_CONTEXTUAL_HEADERS if contextual_headers is None else contextual_headers
        _create_collection(conn, name, [name, embedding_model, dimension, headers, unit,
                                        chunk_tokens, tenant or "default", vector_index or "halfvec"])
    collection = get_collection(conn, name)
    if tenant is not None:
        owner = conn.execute(load_sql("collection_tenant"), [collection.id]).fetchone()[0]
        if owner != tenant:
            raise CollectionError(f"collection {name!r} belongs to tenant {owner!r}, not {tenant!r}")
    if (collection.embedding_model, collection.dimension) != (embedding_model, dimension):
        raise CollectionError(
            f"collection {name!r} holds vectors of model {collection.embedding_model!r} "
            f"({collection.dimension}-d); refusing vectors of {embedding_model!r} ({dimension}-d). "
            "Use another collection name or the collection's model."
        )
    if (collection.unit, collection.chunk_tokens) != (unit, chunk_tokens):
        raise CollectionError(
            f"collection {name!r} stores {collection.unit} units (chunk_tokens={collection.chunk_tokens}); "
            f"refusing {unit} units (chunk_tokens={chunk_tokens})"
        )
    if vector_index is not None and collection.vector_index != vector_index:
        raise CollectionError(
            f"collection {name!r} has a {collection.vector_index} vector index, not {vector_index}: "
            "the index is a collection setting, fixed at creation")
    if contextual_headers is not None and collection.contextual_headers != contextual_headers:
        raise CollectionError(
            f"collection {name!r} was built with contextual_headers={collection.contextual_headers}; "
            "embedding new documents otherwise would mix two kinds of vectors"
        )
    if index:  # index=False: a bulk load (windowrag_pg.ingest) builds it after its rows
        ensure_collection_index(conn, collection)
    return collection


def _create_collection(conn: psycopg.Connection, name: str, values: list) -> None:
    try:
        conn.execute(load_sql("insert_collection"), values)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise CollectionError(
            f"collection {name!r} does not exist, and this role may not create collections: "
            "the schema owner provisions them (docs/tenancy.md)"
        ) from exc


COLLECTION_INDEX_PREFIX = "sentences_embedding_hnsw_c"  # + the collection's id


def collection_index_name(collection: Collection) -> str:
    return f"{COLLECTION_INDEX_PREFIX}{collection.id}"


def check_role_may(conn: psycopg.Connection, privileges: str, *, action: str, collection: str, needs: str) -> None:
    """Refuse, before any work, an action the current role lacks the privileges for (sql/PRIVILEGES.sql:
    whether it may, and its name), naming the role, the collection and the role it would need:
    tenant roles got a bare "permission denied for table collections", a writer's re-embed only
    after embedding the whole collection."""
    allowed, role = conn.execute(load_sql(privileges)).fetchone()
    if not allowed:
        raise CollectionError(f"role {role!r} may not {action} collection {collection!r}: that needs {needs} "
                              "(docs/tenancy.md)")


WRITER_OR_OWNER = "a windowrag_writer role of the collection's tenant or the schema's owner"


def may_index_sentences(conn: psycopg.Connection) -> bool:
    """Whether the current role may create and drop the collections' vector indexes: it owns
    windowrag.sentences (the schema's owner), which tenant roles do not."""
    return bool(conn.execute(load_sql("may_index_sentences")).fetchone()[0])


def orphan_collection_indexes(conn: psycopg.Connection) -> list[tuple[str, int]]:
    """(index name, collection id) of the vector indexes whose collection no longer exists (a
    tenant writer's delete_collection leaves them); for the owner, who sees every collection."""
    return conn.execute(load_sql("orphan_collection_indexes"), {"prefix": COLLECTION_INDEX_PREFIX}).fetchall()


def drop_orphan_collection_indexes(conn: psycopg.Connection) -> list[str]:
    """Drop (CONCURRENTLY on an autocommit connection) the indexes orphan_collection_indexes
    finds, with their key functions; their names."""
    dropped = []
    for index_name, collection_id in orphan_collection_indexes(conn):
        with index_ddl_turn(conn):
            conn.execute(sql.SQL(load_sql("drop_collection_index")).format(
                concurrently=sql.SQL("CONCURRENTLY" if _outside_transaction(conn) else ""),
                index_name=sql.Identifier(index_name)))
            _drop_unused_index_keys_of(conn, collection_id)
        dropped.append(f"windowrag.{index_name}")
    return dropped


# The deferred HNSW build of a bulk load (and the repair of a missing or invalid index): at least
# this much maintenance_work_mem (a server setting above it is kept; a graph that does not fit is
# built much more slowly) and this many parallel maintenance workers (the leader builds too).
INDEX_BUILD_MEMORY = "512MB"
INDEX_BUILD_WORKERS = 1


def collection_index_state(conn: psycopg.Connection, collection: Collection) -> str:
    """"valid", "invalid" (an interrupted CREATE INDEX CONCURRENTLY) or "missing"."""
    row = conn.execute(load_sql("collection_index_valid"), [collection_index_name(collection)]).fetchone()
    return "missing" if row is None else ("valid" if row[0] else "invalid")


def collection_sentence_count(conn: psycopg.Connection, collection: Collection) -> int:
    """The BM25 statistics' sentence count: cheap, exact between ingests, 0 during a bulk load."""
    return conn.execute(load_sql("collection_sentence_count"), [collection.id]).fetchone()[0]


def collection_has_sentences(conn: psycopg.Connection, collection: Collection) -> bool:
    """Whether the collection holds rows, a bulk load's too (whose statistics are counted at its end)."""
    return conn.execute(load_sql("collection_has_sentences"), [collection.id]).fetchone()[0]


def vector_expression(value: sql.Composable, dimension: int, centre: str | None, *,
                      typed: bool = True) -> sql.Composable:
    """VALUE as a collection's halfvec index takes it: cast to halfvec(DIMENSION), minus the index's
    CENTRE (collections.vector_centre as text, migration 0022) when it has one. TYPED False leaves
    off the difference's last cast (what a key function returns: _key_function)."""
    vector = sql.SQL("{}::halfvec({})").format(value, sql.Literal(dimension))
    if centre is None:
        return vector
    difference = sql.SQL("{} - {}::halfvec({})").format(vector, sql.Literal(centre), sql.Literal(dimension))
    # the difference has no dimension of its own, which HNSW needs: cast again
    return sql.SQL("(({})::halfvec({}))").format(difference, sql.Literal(dimension)) if typed else difference


def index_key(value: sql.Composable, dimension: int, *, vector_index: str = "halfvec",
              centre: str | None = None, spread: str | None = None, typed: bool = True) -> sql.Composable:
    """VALUE (a halfvec) as the collection's HNSW index keys it. halfvec: vector_expression. binary:
    the sign bits of VALUE (migration 0012), of VALUE minus CENTRE (0022), or with a SPREAD (0023)
    three bits a dimension: whether the centred value is above -SPREAD, 0 and +SPREAD. The planner
    serves a query by the index only when the query's expression is the same once constants are
    folded: windowrag.dense_search writes it the same way, with the centre and spread as
    parameters of its one-shot plan (migration 0024) instead of these literals. TYPED False leaves
    off the last cast, to the key's type with its dimensions (key_type)."""
    if vector_index != "binary":
        return vector_expression(value, dimension, centre, typed=typed)
    d = sql.Literal(dimension)
    vector = value if centre is None else vector_expression(value, dimension, centre)

    def bits(v: sql.Composable) -> sql.Composable:
        return sql.SQL("binary_quantize({})::bit({})").format(v, d)

    if spread is None:
        return bits(vector) if typed else sql.SQL("binary_quantize({})").format(vector)
    offset = sql.SQL("{}::halfvec({})").format(sql.Literal(spread), d)
    below, above = (sql.SQL("({} {} {})::halfvec({})").format(vector, sql.SQL(op), offset, d) for op in ("-", "+"))
    levels = sql.SQL("{} || {} || {}").format(bits(below), bits(vector), bits(above))
    return sql.SQL("({})::bit({})").format(levels, sql.Literal(3 * dimension)) if typed else levels


def key_type(dimension: int, *, vector_index: str = "halfvec", spread: str | None = None) -> sql.Composable:
    """The type of a collection's index keys (index_key), dimensions included."""
    if vector_index != "binary":
        return sql.SQL("halfvec({})").format(sql.Literal(dimension))
    return sql.SQL("bit({})").format(sql.Literal(dimension if spread is None else 3 * dimension))


def collection_centre(conn: psycopg.Connection, collection: Collection) -> str | None:
    """The centre of the collection's vector index as text (None: not centred)."""
    return index_statistics(conn, collection)[0]


def index_statistics(conn: psycopg.Connection, collection: Collection) -> tuple[str | None, str | None]:
    """The centre and the spread (binary, migration 0023) of the collection's vector index as
    text; None for what it was built without. CollectionError when the collection is gone."""
    row = conn.execute(load_sql("collection_centre"), [collection.id]).fetchone()
    if row is None:  # (an ingest's upkeep raised a TypeError after a delete_collection meanwhile)
        raise CollectionError(f"collection {collection.name!r} was deleted or re-embedded since this ingest opened it")
    return row


# An index key with constants in it (the centre, the spread) is the call of a function of its own
# whose body holds them. CREATE INDEX keeps its expression in pg_index, which has no TOAST table
# before PostgreSQL 18: the three-level binary key (the centre three times, the spread twice, ~22 KB
# of expression at 384 dimensions) was refused there ("row is too big: size 8216, maximum size
# 8160" on PostgreSQL 15), and so would a centred halfvec key of a few thousand dimensions.
# pg_proc keeps long bodies out of line in every version. The function is IMMUTABLE SQL with one
# expression for a body, which the planner inlines wherever it reads the index's expression, so
# the index serves the queries written with the constants (windowrag.dense_search) as it did when
# they were literals in the index. Named after the collection and the body; one no index uses
# any more is dropped with drop_unused_index_keys.
KEY_FUNCTION_PREFIX = "index_key_c"  # + the collection's id, "_", a digest of the body


def _key_function(conn: psycopg.Connection, collection: Collection, centre: str | None,
                  spread: str | None) -> sql.Composable | None:
    """Create the function that computes the collection's index key with CENTRE and SPREAD (above);
    its name. None when the key has no constants (no centre): the index is keyed by the expression."""
    if centre is None:
        return None
    kind, dimension = collection.vector_index, collection.dimension
    body = index_key(sql.SQL("v"), dimension, vector_index=kind, centre=centre, spread=spread, typed=False)
    digest = hashlib.sha256(body.as_string(conn).encode()).hexdigest()[:16]
    name = sql.Identifier("windowrag", f"{KEY_FUNCTION_PREFIX}{collection.id}_{digest}")
    # (bit || bit is bit varying)
    returns = "halfvec" if kind != "binary" else ("bit" if spread is None else "bit varying")
    constants = "centre" if spread is None else "centre and spread"
    comment = (f"The key of the HNSW index of collection id {collection.id} (windowrag.collections) with its {constants} "
               "in the body (pg_index rows cannot hold them before PostgreSQL 18); the planner inlines it. "
               "Dropped when no index uses it (store.collections._key_function).")
    conn.execute(sql.SQL(load_sql("create_index_key_function")).format(
        name=name, returns=sql.SQL(returns), body=body, comment=sql.Literal(comment)))
    return name


def _create_index(conn: psycopg.Connection, collection: Collection, centre: str | None, spread: str | None, *,
                  concurrently: bool, index_name: str | None = None) -> None:
    """CREATE INDEX for the collection (named INDEX_NAME, default its own), keyed by index_key."""
    statement = "collection_index_binary" if collection.vector_index == "binary" else "collection_index"
    function = _key_function(conn, collection, centre, spread)
    if function is None:
        key = index_key(sql.SQL("embedding"), collection.dimension, vector_index=collection.vector_index)
    else:
        key = sql.SQL("{}(embedding)::{}").format(
            function, key_type(collection.dimension, vector_index=collection.vector_index, spread=spread))
    conn.execute(sql.SQL(load_sql(statement)).format(
        concurrently=sql.SQL("CONCURRENTLY" if concurrently else ""),
        index_name=sql.Identifier(index_name or collection_index_name(collection)),
        key=key,
        collection_id=sql.Literal(collection.id),
    ))


def drop_unused_index_keys(conn: psycopg.Connection, collection: Collection) -> int:
    """Drop the collection's key functions (_key_function) that no index uses; how many."""
    return _drop_unused_index_keys_of(conn, collection.id)


def _drop_unused_index_keys_of(conn: psycopg.Connection, collection_id: int) -> int:
    names = [name for (name,) in conn.execute(load_sql("unused_index_keys"),
                                              [f"{KEY_FUNCTION_PREFIX}{collection_id}_"]).fetchall()]
    for name in names:
        conn.execute(sql.SQL(load_sql("drop_index_key_function")).format(name=sql.Identifier("windowrag", name)))
    return len(names)


# A binary index's outer thresholds (migration 0023) sit this many of the rows' standard
# deviations from the centre, in each dimension. Share of the exact top 5 among the
# Hamming-nearest 100 on the dev sets' 105k sentences: one sign bit 0.965; two thresholds at
# ±0.5 0.989; three (0 between) at ±0.6 0.994, at ±0.9 0.997.
BINARY_SPREAD = 0.9


def _rows_statistics(conn: psycopg.Connection, collection: Collection) -> tuple[str | None, str | None]:
    """The centre (the mean of the collection's embeddings) and, for a binary index, the spread
    (BINARY_SPREAD of their standard deviation in each dimension) of an index built on its rows
    now, as halfvec text; Nones for an empty collection."""
    spread = BINARY_SPREAD if collection.vector_index == "binary" else None
    return conn.execute(load_sql("collection_rows_statistics"),
                        {"collection_id": collection.id, "spread": spread}).fetchone()


def _record_statistics(conn: psycopg.Connection, collection: Collection, centre: str | None, spread: str | None) -> None:
    conn.execute(load_sql("set_collection_centre"), {"centre": centre, "spread": spread, "collection_id": collection.id})


def _statistics_of_rows(conn: psycopg.Connection, collection: Collection) -> tuple[str | None, str | None]:
    """Record the statistics of the collection's rows now (_rows_statistics) as those of the index
    about to be built on them."""
    centre, spread = _rows_statistics(conn, collection)
    _record_statistics(conn, collection, centre, spread)
    return centre, spread


def _drop_index_statement(collection: Collection, *, concurrently: bool, index_name: str | None = None) -> sql.Composed:
    return sql.SQL(load_sql("drop_collection_index")).format(
        concurrently=sql.SQL("CONCURRENTLY" if concurrently else ""),
        index_name=sql.Identifier(index_name or collection_index_name(collection)))


def _outside_transaction(conn: psycopg.Connection) -> bool:
    """Whether a statement on CONN runs on its own (autocommit, no transaction block open):
    where CREATE / DROP INDEX CONCURRENTLY may run."""
    return conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


# Any constant (not the migration lock's): one vector-index build or drop on windowrag.sentences at a time.
INDEX_DDL_LOCK_KEY = 0x77696E65
INDEX_DDL_POLL_SECONDS = 0.2
# Connections whose turn is running (index_ddl_turn is reentrant: a build inside ensure_collection_index's turn)
_turn_holders: weakref.WeakSet = weakref.WeakSet()


@contextmanager
def index_ddl_turn(conn: psycopg.Connection) -> Iterator[None]:
    """CONN's turn to build or drop a vector index on the shared sentences table.

    Every collection's index is on windowrag.sentences. Two CREATE INDEX CONCURRENTLY there at
    once deadlock: the second waits for the first's table lock inside its transaction, and the
    first waits for every transaction that holds a snapshot, the second's included (two bulk loads
    into two new collections at once: one index left invalid, 4 times in 4). The turn is an
    advisory lock, polled (pg_try_advisory_*lock), because a session waiting inside
    pg_advisory_lock holds a snapshot the running build would wait for: CONN's session lock, or
    behind a transaction pooler, where a session lock would stay on one pooled backend, a lock
    held by a transaction that a second connection keeps open meanwhile (_turn_of_a_transaction).
    Only outside a transaction block (a caller's transaction keeps its snapshot anyway); reentrant.
    """
    if not _outside_transaction(conn) or conn in _turn_holders:
        yield
        return
    with _turn_of_a_transaction(conn) if behind_transaction_pooler() else _turn_of_the_session(conn):
        _turn_holders.add(conn)
        try:
            yield
        finally:
            _turn_holders.discard(conn)


@contextmanager
def _turn_of_the_session(conn: psycopg.Connection) -> Iterator[None]:
    while not conn.execute(load_sql("index_ddl_try_lock"), [INDEX_DDL_LOCK_KEY]).fetchone()[0]:
        time.sleep(INDEX_DDL_POLL_SECONDS)
    try:
        yield
    finally:
        if not conn.closed:
            conn.execute(load_sql("index_ddl_unlock"), [INDEX_DDL_LOCK_KEY])


@contextmanager
def _turn_of_a_transaction(conn: psycopg.Connection) -> Iterator[None]:
    """The turn as a lock of a READ COMMITTED transaction on a connection of its own, idle after a
    last statement that keeps no snapshot (so no build waits for it): the pooler keeps that
    transaction on one backend, and the lock ends with it, even when this process dies."""
    with psycopg.connect(same_server(conn), prepare_threshold=None) as holder:
        holder.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
        while not holder.execute(load_sql("index_ddl_try_xact_lock"), [INDEX_DDL_LOCK_KEY]).fetchone()[0]:
            holder.rollback()
            time.sleep(INDEX_DDL_POLL_SECONDS)
        holder.execute(load_sql("index_ddl_hold"))
        try:
            yield
        finally:
            try:
                holder.rollback()  # the turn ends with the transaction
            except psycopg.Error as exc:  # its backend ended meanwhile (a timeout of the pooler's)
                warnings.warn(f"the index build's turn ended before the build did: {exc}", stacklevel=3)


def ensure_collection_index(conn: psycopg.Connection, collection: Collection) -> None:
    """Create the collection's HNSW index when it is missing, rebuild it when it is invalid.

    An empty collection's index is created in place (in the caller's transaction, if any). A
    populated collection's index (a bulk load interrupted before its build) is built with
    build_collection_index on an autocommit connection, so that writers of other collections are
    not blocked; inside a transaction it is built in place, as reembed does for its new copy.
    """
    # CREATE INDEX IF NOT EXISTS needs ownership of windowrag.sentences even when the index
    # exists: look first, so that tenant roles (docs/tenancy.md) can open existing collections.
    if collection_index_state(conn, collection) == "valid":
        return
    with index_ddl_turn(conn):
        _ensure_collection_index(conn, collection)


def _ensure_collection_index(conn: psycopg.Connection, collection: Collection) -> None:
    state = collection_index_state(conn, collection)  # again: another session may have built it meanwhile
    if state == "valid":
        return
    try:
        if _outside_transaction(conn) and (state == "invalid" or collection_has_sentences(conn, collection)):
            build_collection_index(conn, collection)
            return
        if state == "invalid":
            conn.execute(_drop_index_statement(collection, concurrently=False))
        try:
            with conn.transaction():  # a savepoint inside the caller's transaction
                _create_index(conn, collection, *_statistics_of_rows(conn, collection), concurrently=False)
        except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
            # two first ingests of a new collection at once: the other session created it
            if collection_index_state(conn, collection) != "valid":
                raise
    except psycopg.errors.InsufficientPrivilege as exc:
        raise CollectionError(
            f"collection {collection.name!r} has no vector index yet and this role may not create one: "
            "create the collection with the schema owner's connection first (docs/tenancy.md)"
        ) from exc


def drop_collection_index(conn: psycopg.Connection, collection: Collection) -> bool:
    """Drop the collection's HNSW index, if any, before a bulk load (autocommit connection: DROP
    INDEX CONCURRENTLY blocks no reader or writer). True when there was one."""
    if not _outside_transaction(conn):
        raise ValueError("drop_collection_index needs an autocommit connection outside a transaction block (DROP INDEX CONCURRENTLY)")
    if collection_index_state(conn, collection) == "missing":
        return False
    with index_ddl_turn(conn):
        conn.execute(_drop_index_statement(collection, concurrently=True))
        drop_unused_index_keys(conn, collection)
    return True


def build_collection_index(conn: psycopg.Connection, collection: Collection) -> bool:
    """Build the collection's HNSW index after a bulk load, or repair it: an invalid index (left by
    an interrupted build) is dropped first. The BM25 statistics and postings, which a bulk load
    defers, are recounted and packed first (windowrag.bm25_rebuild, one transaction). CREATE INDEX CONCURRENTLY on an autocommit connection:
    a plain CREATE INDEX on the shared sentences table takes a SHARE lock, which blocks the writers
    of every collection for the whole build. Readers are never blocked; the build waits for the
    transactions running when it starts (and for their snapshots) to end. No statement timeout
    for the build; maintenance_work_mem at least INDEX_BUILD_MEMORY, INDEX_BUILD_WORKERS parallel
    workers; the session's settings are restored after. False when the index was already valid."""
    if not _outside_transaction(conn):
        raise ValueError("build_collection_index needs an autocommit connection outside a transaction block (CREATE INDEX CONCURRENTLY)")
    with index_ddl_turn(conn):
        state = collection_index_state(conn, collection)
        if state == "valid":
            return False
        if state == "invalid":
            conn.execute(_drop_index_statement(collection, concurrently=True))
        with _index_build_settings(conn):
            # the other half of a bulk load's end: its triggers deferred the BM25 statistics and
            # postings (an interrupted load too: this is also its repair)
            rebuild_bm25(conn, collection)
            _create_index(conn, collection, *_statistics_of_rows(conn, collection), concurrently=True)
        conn.execute(load_sql("analyze_sentences"))  # (ANALYZE takes the lock a build holds: in the turn too)
        drop_unused_index_keys(conn, collection)  # the invalid index's, if it had one
    return True


def centre_collection_index(conn: psycopg.Connection, collection: Collection) -> bool:
    """Rebuild the valid vector index of a populated collection centred on the mean of its rows now
    (an index created on an empty collection or before migration 0022 has no centre; rows written
    since a build move the mean). The new index is built CONCURRENTLY beside the old one, which
    serves searches meanwhile; one short transaction then records the centre, drops the old index
    and gives the new one its name (the DROP waits for the statements using the old index).
    False when there is nothing to do (no valid index, or no rows)."""
    if not _outside_transaction(conn):
        raise ValueError("centre_collection_index needs an autocommit connection outside a transaction block (CREATE INDEX CONCURRENTLY)")
    if collection_index_state(conn, collection) != "valid" or not collection_sentence_count(conn, collection):
        return False
    name = collection_index_name(collection)
    staging = f"{name}_centred"
    with index_ddl_turn(conn):
        conn.execute(_drop_index_statement(collection, concurrently=True, index_name=staging))  # an interrupted run's
        centre, spread = _rows_statistics(conn, collection)
        with _index_build_settings(conn):
            _create_index(conn, collection, centre, spread, concurrently=True, index_name=staging)
        with conn.transaction():
            _record_statistics(conn, collection, centre, spread)
            conn.execute(_drop_index_statement(collection, concurrently=False))
            conn.execute(sql.SQL(load_sql("rename_collection_index")).format(
                staging=sql.Identifier(staging), index_name=sql.Identifier(name)))
        drop_unused_index_keys(conn, collection)  # the old index's
    return True


# An incremental ingest by the owner centres the collection's index (centre_collection_index)
# when the index was built without its rows' statistics (on an empty collection, or one bit a
# dimension before migration 0023) and the collection has grown to at least CENTRE_AT_SENTENCES
# (below, the planner scans exactly: doctor's SMALL_COLLECTION) but at most CENTRE_AT_MOST (a
# rebuild of a few seconds; a larger one is doctor --fix's to run, at a time its owner chooses).
CENTRE_AT_SENTENCES = 5_000
CENTRE_AT_MOST = 50_000


def missing_statistics(collection: Collection, centre: str | None, spread: str | None) -> str | None:
    """What the collection's index (built with CENTRE and SPREAD, index_statistics) lacks that an
    index built on its rows now would have; None when nothing."""
    if centre is None:
        return "not centred (built on an empty collection or before migration 0022)"
    if collection.vector_index == "binary" and spread is None:
        return "one sign bit a dimension (built before migration 0023; three levels find more of the exact nearest)"
    return None


def centre_if_due(conn: psycopg.Connection, collection: Collection) -> bool:
    """Centre the collection's index on its rows when the rule above says so; True when it did."""
    if missing_statistics(collection, *index_statistics(conn, collection)) is None:
        return False
    if not CENTRE_AT_SENTENCES <= collection_sentence_count(conn, collection) <= CENTRE_AT_MOST:
        return False
    return centre_collection_index(conn, collection)


@contextmanager
def _index_build_settings(conn: psycopg.Connection) -> Iterator[None]:
    """For an index build: maintenance_work_mem at least INDEX_BUILD_MEMORY, INDEX_BUILD_WORKERS
    parallel workers, no statement timeout; the session's settings restored after. None of it
    behind a transaction pooler: the settings would land on one pooled backend, the build on
    another (the role's or server's settings apply; docs/services.md)."""
    if behind_transaction_pooler():
        yield
        return
    memory, workers, timeout, enough = conn.execute(load_sql("index_build_settings"), [INDEX_BUILD_MEMORY]).fetchone()
    conn.execute(load_sql("set_index_build_settings"),
                 [memory if enough else INDEX_BUILD_MEMORY, str(INDEX_BUILD_WORKERS), "0"])
    try:
        yield
    finally:
        if not conn.closed and not conn.broken:
            conn.execute(load_sql("set_index_build_settings"), [memory, workers, timeout])


def list_collection_stats(conn: psycopg.Connection) -> list[dict]:
    cur = conn.execute(load_sql("collection_stats"))
    names = [c.name for c in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def delete_collection(conn: psycopg.Connection, name: str) -> int:
    """Delete collection NAME with its documents, sections, sentences and BM25 statistics in one
    transaction, then its vector index; returns the number of documents deleted.

    On an autocommit connection the index goes after the commit, CONCURRENTLY: a plain DROP INDEX
    locks the whole shared sentences table, so it queued behind any long reader and every search
    of every collection queued behind it (7 s behind an 8 s query). Inside the caller's
    transaction it is dropped there, as before.

    A role that may not drop indexes on windowrag.sentences (a tenant writer: only the schema's
    owner may) leaves the index, over no rows, for the owner: `windowrag doctor` names it and
    `doctor --fix` drops it (orphan_collection_indexes). Its DROP failed after the commit before."""
    from .writer import lock_collection_writes

    concurrently = _outside_transaction(conn)
    drops_index = may_index_sentences(conn)
    with conn.transaction():
        collection = get_collection(conn, name)
        check_role_may(conn, "may_delete_collections", action="delete", collection=name, needs=WRITER_OR_OWNER)
        lock_collection_writes(conn, collection)
        documents = conn.execute(load_sql("collection_document_count"), [collection.id]).fetchone()[0]
        conn.execute(load_sql("delete_collection"), [collection.id])
        if not concurrently and drops_index:
            conn.execute(_drop_index_statement(collection, concurrently=False))
            drop_unused_index_keys(conn, collection)
    if concurrently and drops_index:  # an index over no rows meanwhile; its name is never reused (collection ids are not)
        with index_ddl_turn(conn):
            conn.execute(_drop_index_statement(collection, concurrently=True))
            drop_unused_index_keys(conn, collection)
    return documents
