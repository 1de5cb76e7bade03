"""The maintenance state of one console: whether nothing new may start, and its note, kept in memory once read.

Tier: shared (a state file, no database). The state is a small JSON file in the console's state folder
(`maintenance.json`, written atomically: a temporary file, then a rename), so it survives a restart; the
configuration's `maintenance`/`maintenance_note` are the state while no file exists. The console's processes are the
file's only writers (`Maintenance.write`), and each write bumps a change counter every process of the state folder
maps (`store.signals.ChangeSignal`, `maintenance.changes`), so the state is read once and kept in memory until the
counter moves: `current`, which every submission asks, reads one mapped word and touches no file.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from ..settings import Settings
from ..store.signals import ChangeSignal
from .errors import Unavailable

__all__ = ["CHANGES", "DEFAULT_NOTE", "FILE", "Maintenance", "State"]

FILE = "maintenance.json"
CHANGES = "maintenance.changes"
DEFAULT_NOTE = "the console is in maintenance mode: submissions are paused"


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


class Maintenance:
    """The maintenance state of the console on `settings`' state folder: read on first use, then kept."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._path = settings.state_dir / FILE
        self._lock = threading.Lock()
        self._state: State | None = None
        self._changes = ChangeSignal(settings.state_dir / CHANGES)  # moved by every process's write
        self._seen = -1  # the counter when the kept state was read

    @property
    def path(self) -> Path:
        """Return the state file."""
        return self._path

    def current(self) -> State:
        """Return the maintenance state now: the state file's, else the configuration's."""
        stamp = self._changes.stamp()
        with self._lock:
            if self._state is not None and self._seen == stamp:
                return self._state
        state = State(self._settings.maintenance, self._settings.maintenance_note)
        try:
            doc = json.loads(self._path.read_text(encoding="utf-8"))
            state = State(bool(doc["on"]), str(doc.get("note", "")), float(doc.get("since", 0.0)),
                          str(doc.get("by", "")))
        except (OSError, ValueError, KeyError, TypeError):
            pass  # absent or unreadable: the configuration decides
        with self._lock:
            if self._state is None or self._seen != stamp:
                self._state, self._seen = state, stamp
            return self._state

    def refusal(self) -> str:
        """Return why nothing new may start now (the note), or "" when maintenance is off."""
        state = self.current()
        return state.message if state.on else ""

    def require_open(self) -> None:
        """Raise Unavailable (503, with the note) while maintenance is on."""
        why = self.refusal()
        if why:
            raise Unavailable(why)

    def write(self, state: State) -> None:
        """Make `state` the current one, in the state file (atomically) and in memory."""
        tmp = self._path.with_name(f".{FILE}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(asdict(state)), encoding="utf-8")
        os.replace(tmp, self._path)
        self._changes.bump()  # every other process reads the file again
        with self._lock:
            self._state, self._seen = state, -1  # read back once: a write of another process may have followed
