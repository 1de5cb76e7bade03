"""Alembic environment: runs migrations on the connection the console hands over, batch mode on SQLite."""

from __future__ import annotations

from alembic import context

from starforge.console.store.models import Base

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - migrations always run through Database.migrate
    raise RuntimeError("run migrations through starforge.console.store.Database.migrate()")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    transaction_per_migration=True,
)
with context.begin_transaction():
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql("SET LOCAL lock_timeout = '60s'")
    context.run_migrations()
