"""Wake the leader's scheduler from any process on the state folder: a process that commits submissions bumps a
counter mapped from `<state>/scheduler.wake` (`bump`), and the leader's `WakeWatcher` runs a launch cycle soon after
it moves, so a job accepted by another worker (or console on the same host) starts as soon as one accepted by the
leader. Elsewhere (another host's console) the leader's timer still finds it within `scheduler_interval`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ..services.context import Runtime
from ..store.signals import ChangeSignal

__all__ = ["FILE", "POLL_SECONDS", "WakeWatcher", "shared_wake", "waker"]

FILE = "scheduler.wake"
POLL_SECONDS = 0.02  # one mapped-memory read per poll, in the leader only


def shared_wake(state_dir: Path) -> ChangeSignal:
    """Return the counter every process on `state_dir` bumps after committing work for the scheduler."""
    return ChangeSignal(state_dir / FILE)


def waker(signal: ChangeSignal, local: Callable[..., None]) -> Callable[..., None]:
    """Return a wake callback that wakes this process's loops (`local`) and the leader's, wherever it runs."""

    def wake(*, place: bool = True) -> None:
        local(place=place)
        signal.bump()

    return wake


class WakeWatcher:
    """In the leader: watch the shared counter and wake the scheduler loop when another process bumped it."""

    def __init__(self, rt: Runtime, signal: ChangeSignal) -> None:
        self.rt = rt
        self.signal = signal
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="starforge-wake", daemon=True)

    def start(self) -> None:
        """Start watching."""
        self._thread.start()

    def _run(self) -> None:
        seen = self.signal.stamp()
        while not self._stopping.wait(POLL_SECONDS):
            stamp = self.signal.stamp()
            if stamp != seen:
                seen = stamp
                self.rt.wake(place=False)

    def stop(self) -> None:
        """Stop watching."""
        self._stopping.set()
        self._thread.join(timeout=5)
