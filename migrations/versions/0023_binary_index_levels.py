"""A binary index on three levels a dimension: bits above -spread, 0 and +spread around the centre.

Revision ID: 0023
Revises: 0022

collections.vector_spread (halfvec, NULL: one sign bit a dimension) is, for a binary index built
on rows, 0.9 of the rows' standard deviation in each dimension; the index is then over three bits
a dimension, whether the centred embedding is above -spread, 0 and +spread
(store.collections.index_key: a thermometer code, whose Hamming distance is the L1 distance of
the values quantised to four levels), with m = 16 and ef_construction = 128
(sql/collection_index_binary.sql), and windowrag.dense_search writes the same key
(sql/functions.sql). One sign bit loses each value's magnitude: on the dev sets' 105k sentences
recall@5 at ef_search 100 went from 0.936 to 0.989-0.994 for the same index bytes
(docs/performance.md).

The upgrade adds the column (every existing index stays as it is: one bit; `windowrag doctor`
advises rebuilding a large one, `--fix` does) and installs sql/functions.sql. The downgrade
rebuilds every three-level index on the sign bits of the centred embeddings as 0022 did, drops
the column and re-installs 0022's dense_search (migrations/versions/0023_functions.sql): no row
changes.
"""
from alembic import op
from psycopg import sql

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

LEVELLED_COLLECTIONS = ("SELECT id, dimension, vector_centre::text FROM windowrag.collections "
                        "WHERE vector_spread IS NOT NULL ORDER BY id")
# A centred binary index as 0022 builds it (frozen here; sql/collection_index_binary.sql is the live one).
INDEX_0022 = ("CREATE INDEX {index_name} ON windowrag.sentences "
              "USING hnsw ((binary_quantize(((embedding::halfvec({dimension}) - {centre}::halfvec({dimension}))"
              "::halfvec({dimension})))::bit({dimension})) bit_hamming_ops) WITH (m = 24) "
              "WHERE collection_id = {collection_id}")


def upgrade() -> None:
    op.execute("ALTER TABLE windowrag.collections ADD COLUMN vector_spread halfvec")
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    bind = op.get_bind()
    driver = bind.connection.driver_connection  # psycopg: composes identifiers and literals
    for collection_id, dimension, centre in bind.exec_driver_sql(LEVELLED_COLLECTIONS).fetchall():
        name = sql.Identifier(f"sentences_embedding_hnsw_c{collection_id}")
        op.execute(sql.SQL("DROP INDEX IF EXISTS windowrag.{}").format(name).as_string(driver))
        op.execute(sql.SQL(INDEX_0022).format(
            index_name=name, dimension=sql.Literal(dimension), centre=sql.Literal(centre),
            collection_id=sql.Literal(collection_id)).as_string(driver))
    op.execute("ALTER TABLE windowrag.collections DROP COLUMN vector_spread")
    op.execute(load_frozen_sql("0023_functions"))
