"""An empty database gets the newest schema in one transaction, created from the models and stamped with the newest
migration, without loading Alembic (~0.2 s of a first console start); a database that holds any table is left to
the migrations. `tests/unit/console/test_fresh_schema.py` keeps the two ways to the same schema.

Tier: store (DDL on the caller's connection, in the caller's transaction).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Connection, inspect, text

from .models import Base
from .schema_version import newest_revision

__all__ = ["create_if_empty"]


def create_if_empty(connection: Connection, versions: Path) -> bool:
    """Create every table on `connection` and record the newest revision under `versions` when the database holds no
    table at all; return whether it did (False: the database has tables, or the newest revision is not certain)."""
    head = newest_revision(versions)
    if head is None or inspect(connection).get_table_names():
        return False
    Base.metadata.create_all(connection)
    connection.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
                            "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"))
    connection.execute(text("INSERT INTO alembic_version (version_num) VALUES (:head)"), {"head": head})
    return True
