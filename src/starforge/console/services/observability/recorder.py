"""What this console process measures of itself between scrapes: durations in fixed buckets (submissions, scheduler
cycles), recorded in microseconds of work under a lock and read whole by the scrape.

Tier: shared (the process's own state holders; standard library only, so the submission path and the scheduler
loop record without importing `prometheus_client`, which only the scrape loads).
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CYCLE_BUCKETS", "CYCLE_MODES", "SUBMISSION_BUCKETS", "SUBMISSION_OUTCOMES", "AdmissionTally", "Durations",
           "Observations", "TimingsView"]

# upper bounds in seconds; +Inf is implicit. Submissions: p50 is a few ms, a slow commit tens to hundreds of ms.
SUBMISSION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# scheduler cycles: an idle one takes under a millisecond, placing a long queue or reaching a cluster much longer
CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
SUBMISSION_OUTCOMES = ("started", "queued", "rejected", "error")  # observability.timing's labels
CYCLE_MODES = ("place", "advance")  # the scheduler loop's labels


@dataclass(frozen=True)
class TimingsView:
    """One label's durations as a snapshot: cumulative counts per bucket bound (the last one +Inf), count and sum."""

    buckets: tuple[tuple[float, int], ...]
    count: int
    total: float


class Durations:
    """Durations per label value in fixed buckets, as a Prometheus histogram counts them (never reset).

    With `folder` (a console of several worker processes) each process counts into a file of its own there, named
    by `family` and its pid, and `snapshot` sums every file of the folder: whichever worker answers a scrape reports
    the whole console, workers that died and were replaced included. Only the `labels` given are counted then."""

    def __init__(self, bounds: tuple[float, ...], *, family: str = "", labels: tuple[str, ...] = (),
                 folder: Path | None = None) -> None:
        self.bounds = bounds
        self._lock = threading.Lock()
        self._counts: dict[str, list[int]] = {}
        self._sums: dict[str, float] = {}
        self._shared = _SharedCounts(folder, family, labels, len(bounds)) if folder is not None else None

    def observe(self, seconds: float, label: str = "") -> None:
        """Record one duration of `seconds` under `label`."""
        index = bisect.bisect_left(self.bounds, seconds)
        with self._lock:
            if self._shared is not None:
                self._shared.add(label, index, max(0.0, seconds))
                return
            counts = self._counts.get(label)
            if counts is None:
                counts = self._counts[label] = [0] * (len(self.bounds) + 1)
            counts[index] += 1
            self._sums[label] = self._sums.get(label, 0.0) + max(0.0, seconds)

    def snapshot(self) -> dict[str, TimingsView]:
        """Return every label's durations so far, with cumulative bucket counts."""
        if self._shared is not None:
            copied = self._shared.read()
        else:
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


class _SharedCounts:
    """One process's bucket counts and sums in a memory-mapped file (`<family>.<pid>` in `folder`): per label, the
    counts of each bucket (the last one +Inf) as unsigned 64-bit integers, then the sum as a double. Only this
    process writes its file; readers sum every file of the family."""

    def __init__(self, folder: Path, family: str, labels: tuple[str, ...], bounds: int) -> None:
        self.folder, self.family, self.labels = folder, family, labels
        self._width = bounds + 2  # counts (bounds + the +Inf bucket), then the sum
        self._slot = {label: n * self._width for n, label in enumerate(labels)}
        size = max(8, len(labels) * self._width * 8)
        path = folder / f"{family}.{os.getpid()}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
        finally:
            os.close(fd)

    def add(self, label: str, bucket: int, seconds: float) -> None:
        slot = self._slot.get(label)
        if slot is None:  # a label the family does not declare is not counted (never fails the caller)
            return
        at = (slot + bucket) * 8
        struct.pack_into("<Q", self._map, at, struct.unpack_from("<Q", self._map, at)[0] + 1)
        at = (slot + self._width - 1) * 8
        struct.pack_into("<d", self._map, at, struct.unpack_from("<d", self._map, at)[0] + seconds)

    def read(self) -> dict[str, tuple[list[int], float]]:
        counts = {label: [0] * (self._width - 1) for label in self.labels}
        sums = dict.fromkeys(self.labels, 0.0)
        expected = len(self.labels) * self._width * 8
        for path in self.folder.glob(f"{self.family}.*"):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if len(data) < expected:
                continue
            for label, slot in self._slot.items():
                values = struct.unpack_from(f"<{self._width - 1}Qd", data, slot * 8)
                row = counts[label]
                for n in range(self._width - 1):
                    row[n] += values[n]
                sums[label] += values[-1]
        return {label: (row, sums[label]) for label, row in counts.items() if sum(row)}


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

    @classmethod
    def shared_in(cls, folder: Path, *, cache_sizes: Callable[[], Mapping[str, int]] = _no_caches) -> Observations:
        """Return the observations of one worker process of a console whose workers all count into `folder`."""
        return cls(submissions=Durations(SUBMISSION_BUCKETS, family="submissions", labels=SUBMISSION_OUTCOMES,
                                         folder=folder),
                   cycles=Durations(CYCLE_BUCKETS, family="cycles", labels=CYCLE_MODES, folder=folder),
                   cache_sizes=cache_sizes)
