"""The console's runtime as services see it: one frozen, fully typed object built whole at start (`app.build_console`)
and passed to every use case, router, page and background loop.

Tier: shared (values and the process's own state holders; it opens no transaction). It holds what services use:
settings, the database, the served catalog, this console's identity, the engines' capacity, where a run's folders
appear to its job (`job_paths`), the account cache, the submission writer, the per-address throttles, the
maintenance state, the log append locks, the recipe memo, the document renderers (KubeRay), the wake-up events
of the background loops and what this process measures of itself for `/metrics` (`observations`). What drives the engines (the engines themselves, the job sandbox, the recipe runtimes and
the loops) is the console's composition above services (`console.runtime.Console`); services reach the engine side
only through the Protocols and callables below, which the console fills in.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ...contract import JobSpec
from ...recipes import Catalog, RecipeMemo
from ..settings import Settings
from ..store import Database
from .accounts.cache import AccountCache
from .jobs.submission_writer import SubmissionWriter
from .logs.store import LogLocks
from .maintenance_state import Maintenance
from .observability.recorder import Observations
from .throttle import Throttles

__all__ = ["CannotRender", "JobFolders", "JobPathsOf", "RenderFacts", "Renderer", "Runtime", "wake"]


class JobFolders(Protocol):
    """Where a run's folders appear to its job, as far as services ask (an engine's `JobPaths` is one)."""

    @property
    def out(self) -> str:
        """Return the job's output folder, as the job sees it."""
        ...


JobPathsOf = Callable[[Path, str], JobFolders]  # (run folder, the engine's ref or "") -> the folders the job sees


@dataclass(frozen=True)
class RenderFacts:
    """What the console knows of a job besides its spec, for a renderer: id, owner, profile, its URL, wall limit."""

    job_id: str
    owner: str
    profile: str
    base_url: str
    wall_seconds: float | None = None
    nemo_rl_dir: str = ""


class CannotRender(ValueError):
    """Raised by a renderer when the job cannot be rendered as this deployment is configured, at `field`."""

    def __init__(self, field: str, message: str, hint: str) -> None:
        self.field, self.message, self.hint = field, message, hint
        super().__init__(f"{field}: {message}")


class Renderer(Protocol):
    """Render an admitted job as an engine's document (YAML text); raise `CannotRender`."""

    def __call__(self, spec: JobSpec, facts: RenderFacts) -> str: ...


def wake(wakeup: threading.Event, place_due: threading.Event, *, place: bool = True) -> None:
    """Ask the background loops to run a cycle soon: a whole one (`place`), or only launch and watch."""
    if place:
        place_due.set()
    wakeup.set()


@dataclass(frozen=True, eq=False)
class Runtime:
    """Shared state of one console process; routers reach it through `request.app.state.runtime`.

    Nothing is filled in late: every field is given when the console is built, and none is ever replaced (a test
    that needs other throttles builds another runtime with `dataclasses.replace`).
    """

    settings: Settings
    db: Database
    catalog: Catalog
    identity: str  # a random name kept in the state folder (`console.id`): what keys the hub caches of same-named
    # accounts of several consoles on one machine
    capacity: Mapping[str, int]  # slots per series as the engines declare them (the settings' without engines)
    job_paths: JobPathsOf  # where a run's folders appear to its job: as the engine that started it shows them
    accounts: AccountCache  # bearer tokens and quotas, valid until an account changes
    submissions: SubmissionWriter  # commits admitted submissions in batches (group commit)
    throttles: Throttles  # per-address limits of sign-in and device logins (in this process)
    maintenance: Maintenance  # whether nothing new may start, read once from the state folder
    logs: LogLocks  # the append locks of the run logs ingest writes
    recipes: RecipeMemo  # what loading the served catalog keeps in memory
    renderers: Mapping[str, Renderer] = field(default_factory=dict)  # `format` of `/api/jobs/render` -> renderer
    wakeup: threading.Event = field(default_factory=threading.Event)  # the loops run a cycle now
    place_due: threading.Event = field(default_factory=threading.Event)  # the next cycle must place waiting jobs
    observations: Observations = field(default_factory=Observations)  # what `/metrics` reports of this process

    def jobs_dir(self, run_id: str) -> Path:
        """Return the console's own directory for a job: the reports ingest keeps beside the run (the admitted
        JobSpec is stored once, in the job's database row)."""
        return self.settings.state_dir / "jobs" / run_id

    def wake(self, *, place: bool = True) -> None:
        """Ask the background loops to run a cycle soon: a whole one (`place`: capacity or the queue changed — a job
        stopped or ended, a quota moved), or only launch and watch (a job was admitted straight to `submitted`)."""
        wake(self.wakeup, self.place_due, place=place)
