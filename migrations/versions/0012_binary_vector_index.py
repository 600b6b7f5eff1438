"""A collection setting: the HNSW index on the embeddings' sign bits (vector_index 'binary').

Revision ID: 0012
Revises: 0011

collections.vector_index: 'halfvec' (every existing collection, and the default) or 'binary',
an HNSW index over binary_quantize(embedding)::bit(dim) (sql/collection_index_binary.sql), whose
nearest by Hamming distance windowrag.dense_search re-ranks with the stored halfvecs
(sql/functions.sql). Fixed at a collection's creation (`windowrag ingest --vector-index binary`,
Ingestor(vector_index="binary")). The upgrade adds the column and installs sql/functions.sql;
nothing is rebuilt. The downgrade rebuilds the halfvec index of every binary collection (the
index 0011 knows how to use), drops the column and re-installs 0011's dense_search
(migrations/versions/0012_functions.sql): no row changes.
"""
from alembic import op
from psycopg import sql

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

ADD_SETTING = """
ALTER TABLE windowrag.collections
    ADD COLUMN vector_index text NOT NULL DEFAULT 'halfvec' CHECK (vector_index IN ('halfvec', 'binary'))
"""
BINARY_COLLECTIONS = "SELECT id, dimension FROM windowrag.collections WHERE vector_index = 'binary' ORDER BY id"
# The halfvec index as 0011 builds it (frozen here; sql/collection_index.sql is the live one).
HALFVEC_INDEX = ("CREATE INDEX {index_name} ON windowrag.sentences "
                 "USING hnsw ((embedding::halfvec({dimension})) halfvec_cosine_ops) WITH (m = 24) "
                 "WHERE collection_id = {collection_id}")


def upgrade() -> None:
    op.execute(ADD_SETTING)
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    bind = op.get_bind()
    driver = bind.connection.driver_connection  # psycopg: composes identifiers and literals
    for collection_id, dimension in bind.exec_driver_sql(BINARY_COLLECTIONS).fetchall():
        name = sql.Identifier(f"sentences_embedding_hnsw_c{collection_id}")
        op.execute(sql.SQL("DROP INDEX IF EXISTS windowrag.{}").format(name).as_string(driver))
        op.execute(sql.SQL(HALFVEC_INDEX).format(index_name=name, dimension=sql.Literal(dimension),
                                                 collection_id=sql.Literal(collection_id)).as_string(driver))
    op.execute("ALTER TABLE windowrag.collections DROP COLUMN vector_index")
    op.execute(load_frozen_sql("0012_functions"))
