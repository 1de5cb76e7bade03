"""The console runtime: everything `create_app` builds once (settings, database, served catalog, background work)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engines.runtimes import Runtimes
from .services.accounts.cache import AccountCache
from .services.jobs.submission_writer import SubmissionWriter
from .services.throttle import Throttles
from .settings import Settings
from .store import Database

__all__ = ["Runtime", "console_identity", "load_served_catalog"]

IDENTITY_FILE = "console.id"


def console_identity(state_dir: Path) -> str:
    """Return the identity kept in `state_dir` (`console.id`), writing a new random one when there is none."""
    import secrets

    path = state_dir / IDENTITY_FILE
    try:
        known = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        known = ""
    if len(known) == 16 and all(c in "0123456789abcdef" for c in known):
        return known
    fresh = secrets.token_hex(8)
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(fresh + "\n", encoding="ascii")
    tmp.replace(path)
    return fresh


def load_served_catalog(settings: Settings) -> Any:
    """Load the catalog this console serves (builtin unless `catalog.path` is set); raise on an invalid tree."""
    from starforge.recipes import load_catalog

    cat = settings.catalog
    return load_catalog(
        Path(cat.path) if cat.path else None,
        scheme=cat.digest_scheme,
        overlays=False,
        core_version=cat.core_version,
        core_requirement=cat.core_requirement,
    )


@dataclass
class Runtime:
    """Shared state of one console process; routers reach it through `request.app.state.runtime`."""

    settings: Settings
    db: Database
    catalog: Any
    wakeup: threading.Event = field(default_factory=threading.Event)
    place_due: threading.Event = field(default_factory=threading.Event)  # the next cycle must place waiting jobs
    background: list[Any] = field(default_factory=list)
    capacity: dict[str, int] = field(default_factory=dict)
    isolation: Any = None  # executors.isolation.Isolation, prepared (and checked) when the console starts
    engines: Any = None  # executors.routing.Engines, built when the console starts (`background.build_engines`)
    runtimes: Runtimes = field(init=False)  # recipe runtimes: plans, the cache, the build workers
    accounts: AccountCache = field(init=False)  # bearer tokens and quotas, valid until an account changes
    submissions: SubmissionWriter = field(init=False)  # commits admitted submissions in batches (group commit)
    throttles: Throttles = field(init=False)  # per-address limits of sign-in and device logins (in this process)
    _identity: str = field(default="", init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.capacity:
            self.capacity = dict(self.settings.capacity)
        self.runtimes = Runtimes(self.settings.runtimes)
        self.accounts = AccountCache(self.db, self.db.account_changes)
        self.submissions = SubmissionWriter(self)
        self.throttles = Throttles()

    @property
    def identity(self) -> str:
        """Return this console's identity: a random name kept in its state folder (`console.id`), made on first use.

        It keys what several consoles of one machine keep side by side (the hub caches of same-named accounts).
        """
        if not self._identity:
            self._identity = console_identity(self.settings.state_dir)
        return self._identity

    def jobs_dir(self, run_id: str) -> Path:
        """Return the console's own directory for a job: the reports ingest keeps beside the run (the admitted
        JobSpec is stored once, in the job's database row)."""
        return self.settings.state_dir / "jobs" / run_id

    def job_paths(self, run_dir: Path, ref: str = "") -> Any:
        """Return where the folders of the run at `run_dir` appear to its job (`executors.JobPaths`): as the engine
        that started it (`ref`) shows them, else as the local sandbox does."""
        from ..engines import Isolation

        executor = self.engines.for_ref(ref) if ref and self.engines is not None else None
        if executor is not None:
            return executor.job_paths(run_dir)
        isolation = self.isolation or Isolation.none(self.settings.state_dir)
        return isolation.job_paths(run_dir)

    def wake(self, *, place: bool = True) -> None:
        """Ask the background loops to run a cycle soon: a whole one (`place`: capacity or the queue changed — a job
        stopped or ended, a quota moved), or only launch and watch (a job was admitted straight to `submitted`)."""
        if place:
            self.place_due.set()
        self.wakeup.set()
