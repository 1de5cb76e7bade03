"""What the console asks of a running job (the answer of `POST /api/ingest/control`), and when an asked job is
stopped: an interrupted job (`jobs.interrupt`: preempt | pause) is asked to checkpoint and stop, and is stopped by
its engine once its grace period is over.

Tier: shared (pure functions of a job row and the configured grace).
"""

from __future__ import annotations

from typing import Any

from ....wire import ACTION_CHECKPOINT
from ...store.models import Job

__all__ = ["control_answer", "grace_over", "poll_seconds"]

# how often a job asks: often enough that an asked job has most of its grace to save, seldom enough that a thousand
# running jobs cost the console little (a job follows the answer's `poll_seconds`)
_POLL_MIN, _POLL_MAX = 1.0, 15.0


def poll_seconds(grace: float) -> float:
    """Return how long a running job waits between two control calls: an eighth of the grace, within 1–15 s."""
    return min(_POLL_MAX, max(_POLL_MIN, grace / 8))


def control_answer(job: Job, *, grace: float) -> dict[str, Any]:
    """Return the control answer for `job`: `checkpoint` with its reason and deadline when it is asked to stop."""
    poll = poll_seconds(grace)
    if not job.interrupt or job.status not in ("submitted", "running") or job.interrupt_at is None:
        return {"action": "", "reason": "", "deadline": None, "poll_seconds": poll}
    return {"action": ACTION_CHECKPOINT, "reason": job.reason, "deadline": job.interrupt_at + grace,
            "poll_seconds": poll}


def grace_over(interrupt_at: float | None, *, grace: float, now: float) -> bool:
    """Return True when a job asked to checkpoint at `interrupt_at` has had its grace period and must be stopped."""
    return interrupt_at is not None and now >= interrupt_at + grace
