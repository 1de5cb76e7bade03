"""`create_app(settings)`: build the console once (`build_console`: database, served catalog, job sandbox, engines,
the frozen runtime), then its routers; the background loops start with the application's lifespan."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI

from .. import __version__
from ..engines.base import JobPaths
from ..engines.images import Images
from ..engines.isolation import Isolation
from ..engines.routing import Engines
from ..engines.runtimes import Runtimes
from ..recipes import Catalog, RecipeMemo
from .api.errors import install_error_handlers
from .api.hot_paths import HotPaths
from .api.routers import (
    account,
    admin,
    auth,
    benchmarks,
    cluster,
    console_status,
    datasets,
    ingest,
    jobs,
    lifecycle,
    logs,
    meta,
    metrics,
    mirror,
    models,
    notify,
    plugins,
    runs,
    services,
    sweeps,
    volumes,
    web,
)
from .background import Loop, build_engines, prepare_isolation, start_background
from .mcp_mount import mount_mcp
from .renderers import renderers
from .runtime import Console, cache_sizes, console_identity, load_served_catalog
from .scheduler.records import image_digests_in_use
from .scheduler.remote_wake import shared_wake, waker
from .services.accounts.cache import AccountCache
from .services.context import Runtime, wake
from .services.jobs.submission_writer import SubmissionWriter
from .services.logs.store import LogLocks
from .services.maintenance_state import Maintenance
from .services.observability import Observations
from .services.throttle import Throttles
from .settings import Settings
from .store import Database
from .worker_folder import metrics_folder, throttles_file

__all__ = ["Opened", "bootstrap_admin", "build_console", "create_app", "open_state"]

log = logging.getLogger("starforge.console")


@dataclass(frozen=True, eq=False)
class Opened:
    """The console's stored state, opened and checked: its database (migrated) and served catalog with its memo."""

    db: Database
    catalog: Catalog
    memo: RecipeMemo


def open_state(settings: Settings) -> Opened:
    """Prepare the state directory, migrate the database and load the served catalog (refusing an invalid one)."""
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    settings.state_dir.chmod(0o700)
    db = Database(settings.db_url, changes=settings.accounts_changes)
    db.migrate()
    memo = RecipeMemo()
    return Opened(db, load_served_catalog(settings, memo), memo)


def build_console(settings: Settings, *, opened: Opened | None = None, isolation: Isolation | None = None,
                  engines: Engines | None = None, runtimes: Runtimes | None = None,
                  throttles: Throttles | None = None, shared: Path | None = None) -> Console:
    """Build the console whole, once, in start order: the stored state (`open_state`), the job sandbox and the
    engines (when it runs background work), then the frozen runtime services receive. A part given is used as it
    is (`serve` opens the state, prepares the sandbox and reaches the engines itself, saying what they are before it
    listens; tests give throttles on their own clock). `shared` is the folder a worker process shares with the
    others of its console (`worker_folder.prepare`): the per-address limits and the measurements count there.
    """
    opened = opened or open_state(settings)
    db, catalog, memo = opened.db, opened.catalog, opened.memo
    if isolation is None:
        isolation = Isolation.none(settings.state_dir)
        if settings.run_background and "local" in settings.engines():  # an app built without `serve` (tests,
            isolation = prepare_isolation(settings)  # embedding): check and warn here
            if not isolation.sandboxed:
                log.warning("%s", isolation.warning())
    if engines is None and settings.run_background:
        engines = build_engines(settings, isolation)
    capacity = engines.capacity() if engines is not None else dict(settings.capacity)
    wakeup, place_due = threading.Event(), threading.Event()
    runtime = Runtime(
        settings=settings,
        db=db,
        catalog=catalog,
        identity=console_identity(settings.state_dir),
        capacity=capacity,
        job_paths=_job_paths(engines, isolation),
        accounts=AccountCache(db, db.account_changes),
        submissions=SubmissionWriter(db=db, settings=settings, capacity=capacity,  # wakes the leader, wherever
                                     wake=waker(shared_wake(settings.state_dir),
                                                functools.partial(wake, wakeup, place_due))),
        throttles=throttles or Throttles(shared=throttles_file(shared) if shared is not None else None),
        maintenance=Maintenance(settings),
        logs=LogLocks(),
        recipes=memo,
        renderers=renderers(settings),
        wakeup=wakeup,
        place_due=place_due,
        observations=Observations(cache_sizes=functools.partial(cache_sizes, settings)) if shared is None else
        Observations.shared_in(metrics_folder(shared), cache_sizes=functools.partial(cache_sizes, settings)),
    )
    return Console(runtime=runtime, isolation=isolation, engines=engines,
                   runtimes=runtimes or Runtimes(settings.runtimes),
                   images=Images(settings.images, in_use=functools.partial(image_digests_in_use, runtime)))


def _job_paths(engines: Engines | None, isolation: Isolation) -> Callable[[Path, str], JobPaths]:
    """Return where the folders of a run appear to its job: as the engine that started it (`ref`) shows them, else
    as the local sandbox does."""

    def job_paths(run_dir: Path, ref: str = "") -> JobPaths:
        executor = engines.for_ref(ref) if ref and engines is not None else None
        if executor is not None:
            return executor.job_paths(run_dir)
        return isolation.job_paths(run_dir)

    return job_paths


def bootstrap_admin(rt: Runtime | Opened) -> str | None:
    """On a fresh database create the `admin` account and return its one-time API token (None otherwise)."""
    from sqlalchemy import select

    from .services.accounts import credentials as accounts
    from .store.models import User

    with rt.db.write() as db:
        if db.scalar(select(User.id).limit(1)) is not None:
            return None
        admin_user = accounts.create_user(db, "admin", "admin")
        return accounts.issue_api_token(db, admin_user, "first-start admin token")


def create_app(settings: Settings, console: Console | None = None) -> FastAPI:
    """Return the console application (`console` built from `settings` when not given); background loops start with
    the app when the console has engines (`settings.run_background`)."""
    built = console or build_console(settings)
    rt = built.runtime

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        loops: list[Loop] = []
        if built.engines is not None:
            loops = start_background(built)
        try:
            yield
        finally:
            for loop in loops:
                loop.stop()
            built.runtimes.shutdown()  # builds under way are started again by the next console (their jobs wait)
            if built.images is not None:
                built.images.shutdown()  # so are pulls
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
    app.state.console = built
    install_error_handlers(app)
    app.add_middleware(HotPaths)  # dry-run admission and submission without FastAPI's per-request routing
    for module in (meta, auth, account, cluster, jobs, logs, ingest, admin, plugins, datasets, runs, sweeps, lifecycle,
                   models, volumes, services, benchmarks, web, metrics, notify, mirror, console_status):
        app.include_router(module.router)
    mount_mcp(app, rt)  # issue [6]: MCP at /api/mcp/rpc, tools on the services in process; the SDK loads on first use
    return app
