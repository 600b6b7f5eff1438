"""Alembic environment: runs on the connection the library hands over, or on the configured URL."""
from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from windowrag_pg.db.models import Base, include_name

VERSION_TABLE_SCHEMA = "windowrag"
config = context.config


def _run(connection) -> None:
    connection.exec_driver_sql("CREATE SCHEMA IF NOT EXISTS windowrag")
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        version_table_schema=VERSION_TABLE_SCHEMA,
        include_schemas=True,
        include_name=include_name,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    from windowrag_pg.db.connection import database_url, sqlalchemy_url

    # no server-side prepared statement: they break transaction poolers (docs/services.md)
    engine = create_engine(sqlalchemy_url(database_url()), connect_args={"prepare_threshold": None})
    with engine.begin() as conn:
        _run(conn)
