"""The JobSpecs this console admitted, handed from the submission writer to the scheduler, so a job admitted here is
launched from the object admission made and its stored spec is never parsed again in this process.

The writer offers the spec of each job it wrote once their transaction committed; the scheduler takes a job's spec
once, when it claims the job. A job the hand-over does not hold is parsed from its row instead: one admitted by
another console process or before a restart, one that waited long enough to be pushed out of this bounded map, or
one the scheduler claimed in the instant between the commit and the offer.

Tier: shared (in-memory values; no database).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from ....contract import JobSpec

__all__ = ["MAX_HANDED", "Handover"]

MAX_HANDED = 1024  # admitted specs kept for the scheduler: more than a burst it launches in a few cycles


class Handover:
    """A bounded, thread-safe map of job id -> admitted JobSpec, oldest dropped first."""

    def __init__(self, limit: int = MAX_HANDED) -> None:
        self._limit = limit
        self._specs: OrderedDict[str, JobSpec] = OrderedDict()
        self._lock = threading.Lock()

    def offer(self, specs: Iterable[tuple[str, JobSpec]]) -> None:
        """Keep the admitted spec of each job id (dropping the oldest beyond the limit)."""
        with self._lock:
            for job_id, spec in specs:
                self._specs[job_id] = spec
            while len(self._specs) > self._limit:
                self._specs.popitem(last=False)

    def take(self, job_id: str) -> JobSpec | None:
        """Return the admitted spec of `job_id` and forget it, or None when this process holds none."""
        with self._lock:
            return self._specs.pop(job_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._specs)
