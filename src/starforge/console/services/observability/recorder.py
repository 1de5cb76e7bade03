"""What this console process measures of itself between scrapes: durations in fixed buckets (submissions, scheduler
cycles), recorded in microseconds of work under a lock and read whole by the scrape.

Tier: shared (the process's own state holders; standard library only, so the submission path and the scheduler
loop record without importing `prometheus_client`, which only the scrape loads).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CYCLE_BUCKETS", "SUBMISSION_BUCKETS", "AdmissionTally", "Durations", "Observations", "TimingsView"]

# upper bounds in seconds; +Inf is implicit. Submissions: p50 is a few ms, a slow commit tens to hundreds of ms.
SUBMISSION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# scheduler cycles: an idle one takes under a millisecond, placing a long queue or reaching a cluster much longer
CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass(frozen=True)
class TimingsView:
    """One label's durations as a snapshot: cumulative counts per bucket bound (the last one +Inf), count and sum."""

    buckets: tuple[tuple[float, int], ...]
    count: int
    total: float


class Durations:
    """Durations per label value in fixed buckets, as a Prometheus histogram counts them (never reset)."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self._lock = threading.Lock()
        self._counts: dict[str, list[int]] = {}
        self._sums: dict[str, float] = {}

    def observe(self, seconds: float, label: str = "") -> None:
        """Record one duration of `seconds` under `label`."""
        index = bisect.bisect_left(self.bounds, seconds)
        with self._lock:
            counts = self._counts.get(label)
            if counts is None:
                counts = self._counts[label] = [0] * (len(self.bounds) + 1)
            counts[index] += 1
            self._sums[label] = self._sums.get(label, 0.0) + max(0.0, seconds)

    def snapshot(self) -> dict[str, TimingsView]:
        """Return every label's durations so far, with cumulative bucket counts."""
        with self._lock:
            copied = {label: (list(counts), self._sums[label]) for label, counts in self._counts.items()}
        out: dict[str, TimingsView] = {}
        for label, (counts, total) in copied.items():
            running, cumulative = 0, []
            for bound, n in zip((*self.bounds, float("inf")), counts, strict=True):
                running += n
                cumulative.append((bound, running))
            out[label] = TimingsView(tuple(cumulative), running, total)
        return out


@dataclass(eq=False)
class AdmissionTally:
    """Admission decisions counted once from the audit table: by (source, verdict) and rejections by (source, code),
    for the rows up to `settled_id` (rows after it are counted afresh on every scrape: see `figures`)."""

    settled_id: int = 0
    decisions: dict[tuple[str, str], int] = field(default_factory=dict)
    codes: dict[tuple[str, str], int] = field(default_factory=dict)


def _no_caches() -> Mapping[str, int]:
    return {}


@dataclass(eq=False)
class Observations:
    """This console's own measurements and where the scrape finds what only the engine side knows.

    `cache_sizes` returns the bytes each cache holds by name (`runtime`, `image`); the console's composition gives it
    (services never reach the engine side). The scrape keeps its own memory here, under `scrape_lock`: the admission
    tally and its `prometheus_client` registry (made on the first scrape)."""

    submissions: Durations = field(default_factory=lambda: Durations(SUBMISSION_BUCKETS))
    cycles: Durations = field(default_factory=lambda: Durations(CYCLE_BUCKETS))
    cache_sizes: Callable[[], Mapping[str, int]] = _no_caches
    scrape_lock: threading.Lock = field(default_factory=threading.Lock)
    tally: AdmissionTally = field(default_factory=AdmissionTally)
    registry: Any = None  # a prometheus_client CollectorRegistry, typed loosely so that this module never imports it
