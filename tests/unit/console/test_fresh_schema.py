"""An empty database created from the models (`store.fresh_schema`, the console's first start) has exactly the
schema the migrations build, on SQLite and PostgreSQL: every table, column (type, nullability, default), key,
index, unique and check constraint and foreign key, the rows they seed, and the same recorded revision; a database
that already has tables is left to the migrations."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, inspect, text

from starforge.console.store import Database
from starforge.console.store import db as store_db
from starforge.console.store.fresh_schema import create_if_empty
from starforge.console.store.schema_version import newest_revision
from tests.integration.conftest import _postgres_database


def _normal(value: Any) -> Any:
    if value is None:
        return None
    return re.sub(r"\s+", " ", str(value)).strip("() ").replace("'", "").lower()


def _schema(engine: Engine) -> dict[str, Any]:
    """Everything the schema says, in a form that does not depend on the order things were created in."""
    seen = inspect(engine)
    tables: dict[str, Any] = {}
    for table in sorted(seen.get_table_names()):
        tables[table] = {
            "columns": sorted((c["name"], _normal(c["type"]), c["nullable"], _normal(c.get("default")))
                              for c in seen.get_columns(table)),
            "primary key": sorted(seen.get_pk_constraint(table)["constrained_columns"]),
            "foreign keys": sorted((tuple(f["constrained_columns"]), f["referred_table"],
                                    tuple(f["referred_columns"]), _normal(f.get("options", {}).get("ondelete")))
                                   for f in seen.get_foreign_keys(table)),
            "indexes": sorted((i["name"], tuple(i["column_names"]), bool(i["unique"]))
                              for i in seen.get_indexes(table)),
            "unique": sorted(tuple(sorted(u["column_names"])) for u in seen.get_unique_constraints(table)),
            "checks": sorted(_normal(c["sqltext"]) for c in seen.get_check_constraints(table)),
        }
    with engine.connect() as connection:
        revision = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
        rows = {table: sorted(map(tuple, connection.execute(text(f'SELECT * FROM "{table}"')).all()))
                for table in tables if table != "alembic_version"}
    return {"tables": tables, "revision": revision, "rows": rows}


def _by_migrations(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patched:
        patched.setattr(store_db, "create_if_empty", lambda connection, versions: False)
        db = Database(url)
        db.migrate()
        db.dispose()


def _from_models(url: str) -> bool:
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            return create_if_empty(connection, store_db._MIGRATIONS / "versions")
    finally:
        engine.dispose()


def _opened_fresh(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Open an empty database as a console does, and fail if that loaded the migrations."""
    with monkeypatch.context() as patched:
        patched.setattr(store_db.Database, "_upgrade", lambda self, connection: pytest.fail("the migrations ran"))
        db = Database(url)
        db.migrate()
        db.dispose()


def _urls(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, str]:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'migrated.db'}", f"sqlite:///{tmp_path / 'created.db'}"
    admin = request.getfixturevalue("postgres_admin_url")
    return _postgres_database(admin), _postgres_database(admin)


@pytest.mark.parametrize("backend", ["sqlite", "pg"])
def test_the_models_build_the_schema_the_migrations_build(backend: str, tmp_path: Path,
                                                          request: pytest.FixtureRequest,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    migrated, created = _urls(backend, tmp_path, request)
    _by_migrations(migrated, monkeypatch)
    _opened_fresh(created, monkeypatch)
    engines = create_engine(migrated), create_engine(created)
    try:
        by_migrations, from_models = (_schema(engine) for engine in engines)
    finally:
        for engine in engines:
            engine.dispose()
    assert from_models["revision"] == by_migrations["revision"] and len(by_migrations["revision"]) == 1
    assert sorted(from_models["tables"]) == sorted(by_migrations["tables"])
    for table, shape in by_migrations["tables"].items():
        assert from_models["tables"][table] == shape, table
    assert from_models["rows"] == by_migrations["rows"]  # what the migrations seed (the leadership row) is there too


def test_a_database_with_tables_is_left_to_the_migrations(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE someone_elses (id INTEGER PRIMARY KEY)"))
    engine.dispose()
    assert not _from_models(url)  # not empty: Alembic decides (and records what it did)


def test_a_fresh_console_database_opens_at_the_newest_revision_and_migrates_on(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'console.db'}")
    db.migrate()  # the fresh path
    db.migrate()  # and again: already current, nothing to do
    with db.read() as session:
        stored = session.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    db.dispose()
    assert stored == [newest_revision(store_db._MIGRATIONS / "versions")]
