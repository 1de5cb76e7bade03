"""Where the per-client limits keep their state: in this process's memory (`MemoryKeys`), or in a small SQLite file
every worker process of one console shares (`SharedKeys`), so that a client spreading its connections over the
workers meets one limit, not one per process.

Tier: shared (no console database, no HTTP). A table holds, per key, a few numbers of the limiter that owns it; it is
read and written only inside `locked()`, which on the shared file is one exclusive transaction (any process).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

__all__ = ["KeyTable", "MemoryKeys", "SharedKeys"]


class KeyTable(Protocol):
    """The per-key numbers of one limiter, oldest entry first; use every other method inside `locked()`."""

    def locked(self) -> AbstractContextManager[Any]:
        """Hold the table alone (this thread, and on a shared file every process) until the block ends."""
        ...

    def get(self, key: str) -> list[float] | None:
        """Return the numbers kept for `key`, or None."""
        ...

    def put(self, key: str, values: list[float]) -> None:
        """Keep `values` for `key` (a key already kept keeps its age)."""
        ...

    def drop(self, key: str) -> None:
        """Forget `key` (nothing when it is not kept)."""
        ...

    def count(self) -> int:
        """Return how many keys are kept."""
        ...

    def entries(self) -> list[tuple[str, list[float]]]:
        """Return every kept key with its numbers, oldest first."""
        ...


class MemoryKeys:
    """A table in this process's memory (a console of one process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: dict[str, list[float]] = {}

    def locked(self) -> AbstractContextManager[Any]:
        return self._lock

    def get(self, key: str) -> list[float] | None:
        return self._table.get(key)

    def put(self, key: str, values: list[float]) -> None:
        self._table[key] = list(values)

    def drop(self, key: str) -> None:
        self._table.pop(key, None)

    def count(self) -> int:
        return len(self._table)

    def entries(self) -> list[tuple[str, list[float]]]:
        return list(self._table.items())


class SharedKeys:
    """A table of limiter `kind` in the SQLite file `path`, shared by every process that opens it.

    The file lives as long as one console run (the monotonic clock the limiters count with is the machine's, and
    restarts with it): the console's first process makes it afresh (`reset`). Writes are not synced to disk: the state
    of a limit is worth nothing after a crash."""

    def __init__(self, path: Path, kind: str) -> None:
        self.kind = kind
        self._thread_lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute("PRAGMA busy_timeout=30000")

    @staticmethod
    def reset(path: Path) -> None:
        """Make `path` an empty table file, private to this user (the console's first process, before the others)."""
        for stale in (path, path.with_name(path.name + "-journal")):
            stale.unlink(missing_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE keys (kind TEXT NOT NULL, key TEXT NOT NULL, a REAL, b REAL, c REAL, "
                       "PRIMARY KEY (kind, key))")
        db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._thread_lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            finally:  # what a limiter wrote before refusing (raising) is its decision too: always kept
                self._db.execute("COMMIT")

    def locked(self) -> AbstractContextManager[Any]:
        return self._transaction()

    def get(self, key: str) -> list[float] | None:
        row = self._db.execute("SELECT a, b, c FROM keys WHERE kind = ? AND key = ?", (self.kind, key)).fetchone()
        return None if row is None else [v for v in row if v is not None]

    def put(self, key: str, values: list[float]) -> None:
        a, b, c = (*values, None, None, None)[:3]
        self._db.execute("INSERT INTO keys (kind, key, a, b, c) VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, key) "
                         "DO UPDATE SET a = excluded.a, b = excluded.b, c = excluded.c", (self.kind, key, a, b, c))

    def drop(self, key: str) -> None:
        self._db.execute("DELETE FROM keys WHERE kind = ? AND key = ?", (self.kind, key))

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM keys WHERE kind = ?", (self.kind,)).fetchone()[0])

    def entries(self) -> list[tuple[str, list[float]]]:
        rows = self._db.execute("SELECT key, a, b, c FROM keys WHERE kind = ? ORDER BY rowid", (self.kind,))
        return [(key, [v for v in (a, b, c) if v is not None]) for key, a, b, c in rows]
