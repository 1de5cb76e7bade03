"""The scheduler's thread: reconcile once, then run cycles, on a timer and soon after the runtime is woken."""

from __future__ import annotations

import logging
import threading
import time

from ..services.context import Runtime
from ..services.leadership import LostLead
from .cycle import Scheduler

__all__ = ["BackgroundLoop"]

log = logging.getLogger("starforge.scheduler")


class BackgroundLoop:
    """Run the scheduler on a thread: a whole cycle every `interval` seconds, and a cycle soon after the runtime is
    woken — at most one every MIN_GAP seconds, so a burst of submissions is launched in a few cycles rather than one
    cycle each, and placing waiting jobs (which reads the whole queue) only when capacity or the queue changed.

    Its gaps are measured on the scheduler's clock."""

    MIN_GAP = 0.02

    def __init__(self, rt: Runtime, scheduler: Scheduler, interval: float) -> None:
        self.rt = rt
        self.scheduler = scheduler
        self.interval = interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="starforge-scheduler", daemon=True)

    def start(self) -> None:
        """Reconcile with the executor, then start cycling (raises LostLead when another process leads)."""
        self.scheduler.reconcile()
        self._thread.start()

    def _run(self) -> None:
        clock = self.scheduler.clock
        last_place = 0.0
        while not self._stopping.is_set():
            started = clock.monotonic()
            self.rt.wakeup.clear()
            place = self.rt.place_due.is_set() or started - last_place >= self.interval
            if place:
                self.rt.place_due.clear()
                last_place = started
            began = time.perf_counter()  # how long a cycle really takes (`/metrics`), whatever the scheduler's clock
            try:
                self.scheduler.cycle(place=place)
            except LostLead as exc:  # another process leads: this loop's epoch is void for good
                log.warning("scheduler stops: %s", exc)
                return
            except Exception:  # a failed cycle must not stop the loop; the next cycle retries
                log.exception("scheduler cycle failed")
            self.rt.observations.cycles.observe(time.perf_counter() - began, "place" if place else "advance")
            if self.rt.wakeup.wait(max(0.0, self.interval - (clock.monotonic() - last_place))):
                self._stopping.wait(max(0.0, started + self.MIN_GAP - clock.monotonic()))  # let a burst gather

    def stop(self) -> None:
        """Stop after the current cycle (running jobs keep running; a restart re-attaches them)."""
        self._stopping.set()
        self.rt.wakeup.set()
        self._thread.join(timeout=10)
