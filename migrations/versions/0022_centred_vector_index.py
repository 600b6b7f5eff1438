"""A centred vector index: HNSW over embedding - centre (or its bits), the nearest re-ranked by the stored halfvec.

Revision ID: 0022
Revises: 0021

collections.vector_centre (halfvec, NULL: not centred) is the mean of the rows a collection's
index was built on; the index is then on (embedding::halfvec(dim) - centre), or on its sign bits
for vector_index 'binary', the centre written into the index expression as a literal
(sql/collection_index*.sql), and windowrag.dense_search reads the greatest(ef_search, n) nearest
through it and re-ranks them by the cosine of the stored halfvecs (sql/functions.sql). Embeddings of BGE-like models share one
large component; without it the graph finds the exact nearest far more often at the same
ef_search (docs/performance.md). The store sets the centre whenever it builds a collection's
index on rows (after a bulk load, a repair, a re-embedding); an index built on an empty
collection has none.

The upgrade adds the column (every existing index stays as it is, not centred) and installs
sql/functions.sql. The downgrade rebuilds every centred index without its centre (the indexes
0021 knows how to use), drops the column and re-installs 0021's dense_search
(migrations/versions/0022_functions.sql): no row changes.
"""
from alembic import op
from psycopg import sql

from windowrag_pg.db.sqlfiles import functions_as_of, load_frozen_sql

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

CENTRED_COLLECTIONS = ("SELECT id, dimension, vector_index FROM windowrag.collections WHERE vector_centre IS NOT NULL "
                       "ORDER BY id")
# The indexes as 0021 builds them (frozen here; sql/collection_index*.sql are the live ones).
INDEX_0021 = {
    "halfvec": ("CREATE INDEX {index_name} ON windowrag.sentences "
                "USING hnsw ((embedding::halfvec({dimension})) halfvec_cosine_ops) WITH (m = 24) "
                "WHERE collection_id = {collection_id}"),
    "binary": ("CREATE INDEX {index_name} ON windowrag.sentences "
               "USING hnsw ((binary_quantize(embedding)::bit({dimension})) bit_hamming_ops) WITH (m = 24) "
               "WHERE collection_id = {collection_id}"),
}


# The indexes' key functions (windowrag.index_key_c<id>_<digest>, which later revisions create for
# an index's centre), none used by an index once they are rebuilt as 0021 builds them: dropped, so
# that the schema is 0021's (found by a tester: they outlived the downgrade, for good).
DROP_KEY_FUNCTIONS = """
DO $$
DECLARE
    fn regprocedure;
BEGIN
    FOR fn IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = 'windowrag'::regnamespace AND starts_with(p.proname, 'index_key_c')
                AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.refclassid = 'pg_proc'::regclass
                                AND d.refobjid = p.oid AND d.classid = 'pg_class'::regclass) LOOP
        EXECUTE format('DROP FUNCTION %s', fn);
    END LOOP;
END $$
"""


def upgrade() -> None:
    op.execute("ALTER TABLE windowrag.collections ADD COLUMN vector_centre halfvec")
    for statement in functions_as_of(revision):
        op.execute(statement)


def downgrade() -> None:
    bind = op.get_bind()
    driver = bind.connection.driver_connection  # psycopg: composes identifiers and literals
    for collection_id, dimension, vector_index in bind.exec_driver_sql(CENTRED_COLLECTIONS).fetchall():
        name = sql.Identifier(f"sentences_embedding_hnsw_c{collection_id}")
        op.execute(sql.SQL("DROP INDEX IF EXISTS windowrag.{}").format(name).as_string(driver))
        op.execute(sql.SQL(INDEX_0021[vector_index]).format(
            index_name=name, dimension=sql.Literal(dimension), collection_id=sql.Literal(collection_id)).as_string(driver))
    op.execute(DROP_KEY_FUNCTIONS)
    op.execute("ALTER TABLE windowrag.collections DROP COLUMN vector_centre")
    op.execute(load_frozen_sql("0022_functions"))
