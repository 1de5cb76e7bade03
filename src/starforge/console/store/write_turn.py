"""The turn of a SQLite writer: writers of this process queue on a lock, and the processes of one database (a
console's workers, an operator's `sf console` command) queue on an exclusive `flock` of a file beside it, so a
writer starts the moment the previous one commits instead of polling with SQLite's growing sleeps (its busy
handler), whichever process that writer was in.

Tier: store (a lock; no transaction of its own).
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from types import TracebackType

__all__ = ["WriteTurn"]


class WriteTurn:
    """A re-entrant turn (one thread of one process at a time) on the SQLite database file `database`."""

    def __init__(self, database: Path) -> None:
        self.path = database.with_name(database.name + ".write-turn")
        self._lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None
        self._pid = 0

    def _descriptor(self) -> int | None:
        if self._fd is None or self._pid != os.getpid():  # never a descriptor a fork shares with its parent
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            except OSError:  # a folder this process cannot write to: SQLite's own locking still holds
                self._fd = None
            self._pid = os.getpid()
        return self._fd

    def __enter__(self) -> WriteTurn:
        self._lock.acquire()
        self._depth += 1
        if self._depth == 1:
            fd = self._descriptor()
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self._depth -= 1
            if self._depth == 0 and self._fd is not None and self._pid == os.getpid():
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._lock.release()
