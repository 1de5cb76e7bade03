"""The lock that elects a leader: a session-level advisory lock on PostgreSQL, held by a connection of its own (the
lead is lost with that connection), or an exclusive `fcntl` lock on a file in the state folder (SQLite; released by
the kernel when the process dies).

Tier: shared (a lock; no transaction of the console's).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Any, Protocol

__all__ = ["ADVISORY_KEY", "FILE", "FileLock", "LeaderLock", "PostgresLock", "leader_lock"]

ADVISORY_KEY = 727212  # the migrations hold 727211
FILE = "leader.lock"


class LeaderLock(Protocol):
    """A lock at most one process holds: `acquire` without waiting, `held` while it is still ours, `release`."""

    def acquire(self) -> bool:
        """Take the lock if nobody holds it; return whether this process holds it now."""
        ...

    def held(self) -> bool:
        """Return whether this process still holds the lock (PostgreSQL: its connection is alive)."""
        ...

    def release(self) -> None:
        """Let the lock go (idempotent)."""
        ...


class FileLock:
    """An exclusive `flock` on `path`, opened by this process (so never shared with a forked parent or child)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # the lock goes with the descriptor


class PostgresLock:
    """`pg_try_advisory_lock` on a connection of its own, in autocommit, with TCP keepalives: when the connection
    drops, PostgreSQL ends the session and the lock is free for another process. A process that does not hold the
    lock keeps its connection for the next try."""

    def __init__(self, url: str, key: int = ADVISORY_KEY) -> None:
        self.url = url
        self.key = key
        self._engine: Any = None
        self._connection: Any = None
        self._held = False

    def acquire(self) -> bool:
        if self._held:
            return self.held()
        try:
            connection = self._connect()
            self._held = bool(connection.exec_driver_sql(f"SELECT pg_try_advisory_lock({int(self.key)})").scalar())
        except Exception:  # the database is unreachable: nobody here leads until it is back
            self._drop()
            return False
        return self._held

    def held(self) -> bool:
        if not self._held:
            return False
        try:
            self._connection.exec_driver_sql("SELECT 1")
        except Exception:
            self._drop()
            return False
        return True

    def release(self) -> None:
        # Unlock on the session first: closing the connection alone frees the lock only once the server's backend
        # has noticed the goodbye, a moment after `close` returns (another process trying right then would fail).
        if self._held and self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.exec_driver_sql(f"SELECT pg_advisory_unlock({int(self.key)})")
        self._drop()  # the session ends, and any lock still on it with it

    def _connect(self) -> Any:
        if self._connection is None:
            if self._engine is None:
                from sqlalchemy import create_engine
                from sqlalchemy.pool import NullPool

                self._engine = create_engine(self.url, poolclass=NullPool, connect_args={
                    "keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 1, "keepalives_count": 3,
                    "connect_timeout": 5})
            self._connection = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        return self._connection

    def _drop(self) -> None:
        connection, self._connection, self._held = self._connection, None, False
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()


def leader_lock(db_url: str, state_dir: Path) -> LeaderLock:
    """Return the lock that elects the leader of the console database at `db_url` (state folder `state_dir`)."""
    if db_url.startswith("sqlite"):
        return FileLock(state_dir / FILE)
    return PostgresLock(db_url)
