"""The events a webhook may ask for, what a job's status change is called (`event_type`), and reading a hook's list.

Tier: shared (pure; no database). An event is a job's new status, except that a running job requeued because it was
preempted is `preempted`; a change that only rewords the reason is no event.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....contract import Problem

__all__ = ["DEFAULT_EVENTS", "EVENTS", "event_type", "read_events"]

# what a user cares about, in a job's order; `submitted`/`preparing`/`pending` are the console's inner steps
EVENTS = ("queued", "running", "paused", "preempted", "succeeded", "failed", "stopped")
DEFAULT_EVENTS = ("succeeded", "failed", "preempted")
_PLACED = ("submitted", "preparing", "running")


def event_type(previous: str, status: str, reason: str) -> str | None:
    """Return the event a change from `previous` to `status` (with `reason`) is, or None when no hook hears it."""
    if previous == status:
        return None
    if status == "queued" and previous in _PLACED and reason.startswith("preempted"):
        return "preempted"
    return status if status in EVENTS else None


def read_events(raw: object) -> tuple[tuple[str, ...], list[Problem]]:
    """Return the events of a hook's request (`None`: the default ones) in EVENTS order, or the problems at `events`."""
    if raw is None:
        return DEFAULT_EVENTS, []
    names: Sequence[object] = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, list) else [raw]
    wanted = {str(n).strip() for n in names if str(n).strip()} if all(isinstance(n, str) for n in names) else None
    if not wanted:
        return (), [Problem("events", "invalid_events", "events must be a non-empty list of event names",
                            f"choose among {', '.join(EVENTS)}, e.g. succeeded,failed")]
    unknown = sorted(wanted - set(EVENTS))
    if unknown:
        return (), [Problem("events", "unknown_event", f"unknown event {', '.join(unknown)}",
                            f"choose among {', '.join(EVENTS)}")]
    return tuple(e for e in EVENTS if e in wanted), []
