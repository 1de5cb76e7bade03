"""The scheduler's clock: wall time for what it stores (leases, status times, revocations) and a monotonic reading
for what it measures (phase durations, the loop's gaps), injected so tests advance time instead of sleeping."""

from __future__ import annotations

import threading
import time
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock"]


class Clock(Protocol):
    """Where the scheduler reads the time."""

    def now(self) -> float:
        """Return the wall time, in seconds since the epoch (what rows store)."""
        ...

    def monotonic(self) -> float:
        """Return a monotonic reading, in seconds (only differences mean anything)."""
        ...


class SystemClock:
    """The machine's clocks (`time.time`, `time.monotonic`)."""

    def now(self) -> float:
        """Return `time.time()`."""
        return time.time()

    def monotonic(self) -> float:
        """Return `time.monotonic()`."""
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told to (`advance`): for tests of leases, restarts and time limits."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._lock = threading.Lock()
        self._now = start
        self._monotonic = 0.0

    def now(self) -> float:
        """Return the clock's wall time."""
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        """Return the seconds this clock has advanced since it was made."""
        with self._lock:
            return self._monotonic

    def advance(self, seconds: float) -> None:
        """Move both readings forward by `seconds` (never backwards)."""
        if seconds < 0:
            raise ValueError("a clock never moves backwards")
        with self._lock:
            self._now += seconds
            self._monotonic += seconds
