"""Maintenance mode, switchable at run time: while it is on, nothing new starts (submissions, sweeps and follow-up
requests are refused with 503 and the note; queued jobs keep waiting) and running jobs run on.

Tier: use case (`status` reads the active jobs in one transaction). The state itself, its file and what is kept in
memory, is the runtime's `Maintenance` (`maintenance_state`); these are the administrator's actions on it.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select

from ...contract import Problem
from ..store.models import Job
from .context import Runtime
from .errors import Rejected
from .jobs.rows import ACTIVE
from .maintenance_state import FILE, Maintenance, State

__all__ = ["FILE", "MAX_NOTE", "WAITING_FOR", "Maintenance", "State", "drain", "resume", "status"]

MAX_NOTE = 500
WAITING_FOR = "maintenance"  # what a held job waits for (`Job.waiting_for`)


def status(rt: Runtime) -> dict[str, Any]:
    """Return the maintenance object of `GET /api/admin/maintenance`: the mode and note, the jobs still active
    (`blockers`: submitted, preparing or running) and whether the console may be restarted now."""
    state = rt.maintenance.current()
    with rt.db.read() as db:
        active = list(db.scalars(select(Job.id).where(Job.status.in_(ACTIVE)).order_by(Job.submitted_at)))
    return {"maintenance_mode": state.on, "note": state.note, "since": state.since or None, "by": state.by,
            "paused": [], "blockers": active, "failed": [], "safe_to_restart": state.on and not active,
            "remaining_active": len(active)}


def drain(rt: Runtime, *, by: str, body: dict[str, Any]) -> dict[str, Any]:
    """Turn maintenance on with `body`'s optional `note` (kept when maintenance is already on and none is given) and
    return the state; running jobs run on, queued ones wait."""
    note = body.get("note") or ""
    if not isinstance(note, str) or len(note.strip()) > MAX_NOTE:
        raise Rejected("Invalid request", [Problem("note", "invalid_request",
                                                   f"the note must be text of at most {MAX_NOTE} characters")],
                       status=422)
    note = note.strip()
    before = rt.maintenance.current()
    if before.on and not note:
        note = before.note
    rt.maintenance.write(State(True, note, before.since if before.on else time.time(), by))
    return status(rt)


def resume(rt: Runtime, *, by: str) -> dict[str, Any]:
    """Turn maintenance off; the scheduler places the waiting jobs on its next cycle. Return `{resuming}` and the
    state."""
    rt.maintenance.write(State(False, "", time.time(), by))
    rt.wake()
    return {"resuming": True, **status(rt)}
