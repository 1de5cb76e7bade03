"""`create_app(settings)`: build the console once — database (migrated), served catalog, routers, background loops."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI

from .. import __version__
from .api.errors import install_error_handlers
from .api.hot_paths import HotPaths
from .api.routers import (
    account,
    admin,
    auth,
    cluster,
    datasets,
    ingest,
    jobs,
    lifecycle,
    logs,
    meta,
    models,
    plugins,
    runs,
    sweeps,
    volumes,
    web,
)
from .mcp_mount import mount_mcp
from .runtime import Runtime, load_served_catalog
from .settings import Settings
from .store import Database

__all__ = ["bootstrap_admin", "build_runtime", "create_app", "prepare_isolation"]

log = logging.getLogger("starforge.console")


def build_runtime(settings: Settings) -> Runtime:
    """Prepare the state directory, migrate the database and load the served catalog (refusing an invalid one)."""
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    settings.state_dir.chmod(0o700)
    db = Database(settings.db_url, changes=settings.accounts_changes)
    db.migrate()
    return Runtime(settings=settings, db=db, catalog=load_served_catalog(settings))


def prepare_isolation(rt: Runtime) -> Any:
    """Check and return how the local executor isolates jobs; raise SandboxUnavailable with the fix."""
    from ..engines.isolation import Isolation
    from ..engines.local import detect_gpus

    gpus = detect_gpus()
    slots = sum({**{s: len(ids) for s, ids in gpus.items()}, **rt.settings.capacity}.values())
    from .job_channel import channel_folder

    masked = (rt.settings.config_file,) if rt.settings.config_file else ()
    return Isolation.prepare(rt.settings.state_dir, rt.settings.local, total_slots=slots, masked=masked,
                             channel=channel_folder(rt.settings.state_dir))


def bootstrap_admin(rt: Runtime) -> str | None:
    """On a fresh database create the `admin` account and return its one-time API token (None otherwise)."""
    from sqlalchemy import select

    from .services.accounts import credentials as accounts
    from .store.models import User

    with rt.db.write() as db:
        if db.scalar(select(User.id).limit(1)) is not None:
            return None
        admin_user = accounts.create_user(db, "admin", "admin")
        return accounts.issue_api_token(db, admin_user, "first-start admin token")


def create_app(settings: Settings, runtime: Runtime | None = None) -> FastAPI:
    """Return the console application; background loops start with the app when `settings.run_background`."""
    rt = runtime or build_runtime(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if settings.run_background:
            from .background import start_background

            start_background(rt)
        try:
            yield
        finally:
            for task in rt.background:
                task.stop()
            rt.runtimes.shutdown()  # builds under way are started again by the next console (their jobs wait)
            rt.db.dispose()

    app = FastAPI(
        title="StarForge console",
        version=__version__,
        description="Admits forge/v2 JobSpecs and runs them. Wire protocol: see docs/ and the wire-protocol reference.",
        lifespan=lifespan,
        redirect_slashes=False,
        docs_url=None,  # FastAPI's docs pages load Swagger UI and ReDoc from a CDN: `/docs` is the web console's own
        redoc_url=None,
    )
    app.router.redirect_slashes = False
    app.state.runtime = rt
    install_error_handlers(app)
    app.add_middleware(HotPaths)  # dry-run admission and submission without FastAPI's per-request routing
    for module in (meta, auth, account, cluster, jobs, logs, ingest, admin, plugins, datasets, runs, sweeps, lifecycle,
                   models, volumes, web):
        app.include_router(module.router)
    mount_mcp(app, rt)  # issue [6]: MCP at /api/mcp/rpc, tools on the services in process; the SDK loads on first use
    return app
