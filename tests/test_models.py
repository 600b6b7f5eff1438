"""The SQLAlchemy models (windowrag_pg/db/models.py) describe the schema the migrations build:
Alembic's autogenerate, run against a database at head, finds nothing to change. Were a model
behind, `alembic revision --autogenerate` would propose dropping what the migrations made."""
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from windowrag_pg.db.connection import connect, sqlalchemy_url
from windowrag_pg.db.models import Base, include_name


def autogenerate_diff(url: str, *, schema_change: str | None = None) -> list:
    """What autogenerate would write, with SCHEMA_CHANGE made first in the same transaction
    (rolled back: PostgreSQL's DDL is transactional)."""
    engine = create_engine(sqlalchemy_url(url))
    try:
        with engine.connect() as connection:
            if schema_change:
                connection.exec_driver_sql(schema_change)
            context = MigrationContext.configure(connection, opts={
                "include_schemas": True, "include_name": include_name, "compare_type": True})
            diff = compare_metadata(context, Base.metadata)
            connection.rollback()
            return diff
    finally:
        engine.dispose()


def test_autogenerate_finds_nothing_between_the_models_and_a_database_at_head(db_url, samples_collection):
    # samples_collection: a collection with its own vector index, which the models leave out
    connect(db_url).close()  # migrated to head
    assert autogenerate_diff(db_url) == []


def test_a_schema_the_models_do_not_describe_is_reported(db_url):
    connect(db_url).close()
    diff = autogenerate_diff(db_url, schema_change=(
        "ALTER TABLE windowrag.sections ADD COLUMN note text; "
        "CREATE INDEX sections_end_char ON windowrag.sections (end_char)"))
    assert sorted(entry[0] for entry in diff) == ["remove_column", "remove_index"]
    assert autogenerate_diff(db_url) == []  # rolled back
