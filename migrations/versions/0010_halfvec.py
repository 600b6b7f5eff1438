"""Embeddings stored as halfvec, each collection's HNSW index on embedding::halfvec(dim).

Revision ID: 0010
Revises: 0009

Half the bytes per vector in the sentence rows and in the HNSW index (docs/performance.md
measures it, with dense recall@5 of the halfvec index against exact search). The upgrade
converts a populated database in place, in the migration's one transaction: it drops each
collection's HNSW index, changes windowrag.sentences.embedding to halfvec (every row kept, each
value rounded to half precision: ~3 significant digits, which normalized embeddings lose
nothing of that matters to ranking), builds each collection's index again on the halfvec
expression (m = 24: see sql/collection_index.sql), bounds collections.dimension to 4,000 (the
most HNSW indexes on halfvec), and installs sql/functions.sql (dense_search casts the query to
halfvec(dim); candidate_sentences reads the stored vectors as vector). A collection wider than 4,000 dimensions stops the upgrade
with its name (at 0009 it could not have had an index either).

The downgrade is the exact reverse and loses nothing (halfvec values are exact in vector):
vector column, vector indexes on embedding::vector(dim), the dimension bound 16,000 again, and
the two functions as 0009 had them (migrations/versions/0010_functions.sql, frozen). A
collection wider than 2,000 dimensions (the most HNSW indexes on vector) stops it with its name.

Both directions take an ACCESS EXCLUSIVE lock on windowrag.sentences while the table is
rewritten and the indexes are built: minutes for millions of sentences.
"""
from alembic import op
from psycopg import sql

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# The index DDL of each side, frozen here (sql/collection_index.sql is the live one): the
# migration must rebuild exactly what each revision had.
INDEX = {
    "halfvec": ("CREATE INDEX {index_name} ON windowrag.sentences "
                "USING hnsw ((embedding::halfvec({dimension})) halfvec_cosine_ops) WITH (m = 24) "
                "WHERE collection_id = {collection_id}"),
    "vector": ("CREATE INDEX {index_name} ON windowrag.sentences "
               "USING hnsw ((embedding::vector({dimension})) vector_cosine_ops) WHERE collection_id = {collection_id}"),
}
MAX_DIMENSION = {"halfvec": 4000, "vector": 2000}     # what pgvector's HNSW takes for each type
DIMENSION_CHECK = {"halfvec": 4000, "vector": 16000}  # collections.dimension bound at 0010 / before
COLLECTIONS = "SELECT id, name, dimension FROM windowrag.collections ORDER BY id"


def upgrade() -> None:
    _convert("halfvec")
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    _convert("vector")
    op.execute(load_frozen_sql("0010_functions"))


def _convert(target: str) -> None:
    bind = op.get_bind()
    driver = bind.connection.driver_connection  # psycopg: composes identifiers and literals
    collections = bind.exec_driver_sql(COLLECTIONS).fetchall()
    too_wide = [(name, dimension) for _, name, dimension in collections if dimension > MAX_DIMENSION[target]]
    if too_wide:
        listed = ", ".join(f"{name!r} ({dimension} dimensions)" for name, dimension in too_wide)
        raise RuntimeError(
            f"windowrag: cannot store embeddings as {target}: an HNSW index on {target} holds at most "
            f"{MAX_DIMENSION[target]:,} dimensions, and collection(s) {listed} are wider. Delete them "
            "(windowrag delete-collection NAME) or move them to a narrower model (windowrag reembed) first. "
            "Nothing was changed.")
    for collection_id, _, _ in collections:
        op.execute(sql.SQL("DROP INDEX IF EXISTS windowrag.{}").format(
            sql.Identifier(f"sentences_embedding_hnsw_c{collection_id}")).as_string(driver))
    op.execute(sql.SQL("ALTER TABLE windowrag.sentences ALTER COLUMN embedding TYPE {type} USING embedding::{type}")
               .format(type=sql.Identifier(target)).as_string(driver))
    op.execute(sql.SQL("ALTER TABLE windowrag.collections DROP CONSTRAINT collections_dimension_check, "
                       "ADD CONSTRAINT collections_dimension_check CHECK (dimension BETWEEN 1 AND {high})")
               .format(high=sql.Literal(DIMENSION_CHECK[target])).as_string(driver))
    for collection_id, _, dimension in collections:
        op.execute(sql.SQL(INDEX[target]).format(
            index_name=sql.Identifier(f"sentences_embedding_hnsw_c{collection_id}"),
            dimension=sql.Literal(dimension), collection_id=sql.Literal(collection_id)).as_string(driver))
