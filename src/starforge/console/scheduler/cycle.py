"""The scheduler: its phases (sweep, place, launch, watch) over one runtime, its engines and a clock, run as a cycle.

Each phase is a module of its own (`place`, `launch`, `watch`; the sweep of expired services is
`services.serving.lifecycle.stop_expired`); this class holds what they share (the runtime, the
engines, the clock, this console's lease owner name) and runs them in order, logging each one's duration.
"""

from __future__ import annotations

import logging
import secrets

from ...engines import ExecState, Executor
from ...engines.images import Images
from ...engines.routing import Engines
from ...engines.runtimes import Runtimes
from ..services.context import Runtime
from ..services.serving.lifecycle import any_expired, stop_expired
from .claim import release_others
from .clock import Clock, SystemClock
from .launch import Launcher
from .place import place
from .records import image_digests_in_use
from .watch import Watcher

__all__ = ["Scheduler"]

log = logging.getLogger("starforge.scheduler")


class Scheduler:
    """Advance jobs through queued → submitted → running → a final status, on the console's engines.

    `clock` is where every phase reads the time (the machine's by default; `clock.ManualClock` in tests); `epoch` is
    the fencing token of the leader it runs in (`services.leadership`), recorded on every attempt it launches."""

    def __init__(self, rt: Runtime, executor: Executor | Engines, *, clock: Clock | None = None,
                 runtimes: Runtimes | None = None, images: Images | None = None, epoch: int = 0) -> None:
        self.rt = rt
        self.engines = executor if isinstance(executor, Engines) else Engines.single(executor)
        self.clock: Clock = clock or SystemClock()
        self.owner = f"console-{secrets.token_hex(4)}"
        self.runtimes = runtimes or Runtimes(rt.settings.runtimes)  # recipe runtimes: plans, cache, build workers
        self.images = images or Images(rt.settings.images, in_use=lambda: image_digests_in_use(rt))
        self.epoch = epoch
        self.launcher = Launcher(rt, self.engines, self.clock, self.owner, self.runtimes, self.images, epoch=epoch)
        self.watcher = Watcher(rt, self.engines, self.clock)

    def sweep(self) -> int:
        """Stop the services whose TTL has passed (their jobs stop in the watch phase); return how many."""
        now = self.clock.now()
        with self.rt.db.read() as db:
            if not any_expired(db, now):
                return 0
        with self.rt.db.write() as db:
            return stop_expired(db, now)

    def place(self) -> int:
        """Decide every waiting job on one snapshot and commit the placements; return how many were placed."""
        return place(self.rt, self.clock)

    def launch(self) -> int:
        """Start the prepared jobs whose runtime is built, then every placed job this console could claim."""
        return self.launcher.launch()

    def watch(self) -> int:
        """Poll running jobs, deliver stops and record final statuses; return how many ended."""
        return self.watcher.watch()

    def finish(self, job_id: str, state: ExecState) -> None:
        """Record the final status of a job whose process ended (see `Watcher.finish`)."""
        self.watcher.finish(job_id, state)

    def reconcile(self) -> None:
        """After a restart or on taking the lead: void the leases of earlier leaders (`claim.release_others`), then
        re-attach live jobs and finish those that ended meanwhile (see `Watcher.reconcile`)."""
        release_others(self.rt, owner=self.owner, now=self.clock.now())
        self.watcher.reconcile()

    def cycle(self, *, place: bool = True) -> None:
        """Run the phases once (without `place`: only sweep, launch and watch)."""
        phases = (self.sweep, self.place, self.launch, self.watch) if place else (self.sweep, self.launch, self.watch)
        for phase in phases:
            start = self.clock.monotonic()
            count = phase()
            elapsed = (self.clock.monotonic() - start) * 1000
            if count:
                log.info("%s: %d job(s) in %.1f ms", phase.__name__, count, elapsed)
