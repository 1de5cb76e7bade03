"""Console start-up stays light: importing the console's application and server loads none of the modules only some
routes or a first migration need, a database at the newest migration opens without Alembic, and the hot table reads
only the routers holding the hot endpoints (so no time is asserted, only what was loaded)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fastapi import APIRouter, FastAPI

from starforge.console.api.hot_paths import hot_routes
from starforge.console.api.routers import jobs, meta
from starforge.console.store import Database
from starforge.console.store.schema_version import is_current, newest_revision

# each costs console start-up tens of milliseconds or more, and is needed only by some routes, later, or never
LAZY = ("alembic", "httpx", "jinja2", "packaging.requirements", "mcp", "rich", "pygments", "markdown", "uvicorn",
        "prometheus_client", "mlflow", "ray")
VERSIONS = Path(__file__).resolve().parents[3] / "src/starforge/console/store/migrations/versions"


def _loaded(code: str) -> list[str]:
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_console_loads_no_module_only_some_routes_need() -> None:
    loaded = _loaded("import starforge.console.app\nimport starforge.console.server")
    assert [name for name in LAZY if name in loaded] == []


def test_a_database_at_the_newest_migration_opens_without_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'console.db'}"
    db = Database(url)
    db.migrate()  # a fresh database: Alembic creates the schema
    db.dispose()
    loaded = _loaded(f"from starforge.console.store import Database\ndb = Database({url!r})\ndb.migrate()\n"
                     "db.dispose()")
    assert "alembic" not in loaded


def test_the_newest_revision_is_the_one_no_migration_follows(tmp_path: Path) -> None:
    assert newest_revision(VERSIONS) == max(p.name.split("_")[3] for p in VERSIONS.rglob("*.py"))
    (tmp_path / "a.py").write_text("revision = 'a'\ndown_revision = None\n")
    (tmp_path / "b.py").write_text('revision: str = "b"\ndown_revision: str | None = "a"\n')
    assert newest_revision(tmp_path) == "b"
    (tmp_path / "c.py").write_text("revision = 'c'\ndown_revision = 'a'\n")  # a second head: Alembic decides
    assert newest_revision.__wrapped__(tmp_path) is None
    (tmp_path / "c.py").write_text("revision = 'c'\ndown_revision = ('a', 'b')\n")  # a merge: Alembic decides
    assert newest_revision.__wrapped__(tmp_path) is None


def test_only_a_database_recording_the_newest_revision_is_current(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'console.db'}")
    try:
        with db._write_engine.connect() as connection:
            assert not is_current(connection, VERSIONS)  # no schema yet
        db.migrate()
        with db._write_engine.connect() as connection:
            assert is_current(connection, VERSIONS)
            connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0001'")
            assert not is_current(connection, VERSIONS)
            connection.rollback()
    finally:
        db.dispose()


def test_the_hot_table_is_found_in_a_router_included_within_another() -> None:
    outer = APIRouter()
    outer.include_router(jobs.router)
    app = FastAPI()
    app.include_router(meta.router)
    app.include_router(outer)
    assert set(hot_routes(app.router.routes)) == {("POST", "/api/admission/check"), ("POST", "/api/jobs")}
