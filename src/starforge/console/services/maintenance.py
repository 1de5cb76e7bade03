"""Maintenance mode, switchable at run time: while it is on, nothing new starts (submissions, sweeps and follow-up
requests are refused with 503 and the note; queued jobs keep waiting) and running jobs run on.

Tier: use case (`status` reads the active jobs in one transaction). The state is a small JSON file in the console's
state folder (`maintenance.json`, written atomically: a temporary file, then a rename), so it survives a restart;
the configuration's `maintenance`/`maintenance_note` are the state while no file exists. The console is the file's
only writer (`drain`, `resume`), so it is read once and then kept in memory: `current`, which every submission
asks, touches no file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from ...contract import Problem
from ..runtime import Runtime
from ..settings import Settings
from ..store.models import Job
from .errors import Rejected, Unavailable
from .jobs.rows import ACTIVE

__all__ = ["FILE", "MAX_NOTE", "WAITING_FOR", "State", "current", "drain", "refusal", "require_open", "resume", "status"]

FILE = "maintenance.json"
MAX_NOTE = 500
WAITING_FOR = "maintenance"  # what a held job waits for (`Job.waiting_for`)
DEFAULT_NOTE = "the console is in maintenance mode: submissions are paused"
_lock = threading.Lock()
_cache: dict[Path, State] = {}  # state file -> the state it holds (read once; `_write` keeps it current)


@dataclass(frozen=True)
class State:
    """Whether maintenance is on, its note, since when (epoch seconds; 0 from the configuration) and by whom."""

    on: bool
    note: str = ""
    since: float = 0.0
    by: str = ""

    @property
    def message(self) -> str:
        """Return what a refused request is told: the note, else a default sentence."""
        return self.note or DEFAULT_NOTE


def _path(settings: Settings) -> Path:
    return settings.state_dir / FILE


def current(settings: Settings) -> State:
    """Return the maintenance state now: the state file's, else the configuration's."""
    path = _path(settings)
    with _lock:
        cached = _cache.get(path)
    if cached is not None:
        return cached
    state = State(settings.maintenance, settings.maintenance_note)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        state = State(bool(doc["on"]), str(doc.get("note", "")), float(doc.get("since", 0.0)), str(doc.get("by", "")))
    except (OSError, ValueError, KeyError, TypeError):
        pass  # absent or unreadable: the configuration decides
    with _lock:
        return _cache.setdefault(path, state)


def refusal(settings: Settings) -> str:
    """Return why nothing new may start now (the note), or "" when maintenance is off."""
    state = current(settings)
    return state.message if state.on else ""


def require_open(settings: Settings) -> None:
    """Raise Unavailable (503, with the note) while maintenance is on."""
    why = refusal(settings)
    if why:
        raise Unavailable(why)


def _write(settings: Settings, state: State) -> None:
    path = _path(settings)
    tmp = path.with_name(f".{FILE}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(asdict(state)), encoding="utf-8")
    os.replace(tmp, path)
    with _lock:
        _cache[path] = state


def status(rt: Runtime) -> dict[str, Any]:
    """Return the maintenance object of `GET /api/admin/maintenance`: the mode and note, the jobs still active
    (`blockers`: submitted, preparing or running) and whether the console may be restarted now."""
    state = current(rt.settings)
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
    before = current(rt.settings)
    if before.on and not note:
        note = before.note
    _write(rt.settings, State(True, note, before.since if before.on else time.time(), by))
    return status(rt)


def resume(rt: Runtime, *, by: str) -> dict[str, Any]:
    """Turn maintenance off; the scheduler places the waiting jobs on its next cycle. Return `{resuming}` and the
    state."""
    _write(rt.settings, State(False, "", time.time(), by))
    rt.wake()
    return {"resuming": True, **status(rt)}
