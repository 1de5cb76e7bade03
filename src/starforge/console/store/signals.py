"""Tell every process sharing a console database that an account, a token or a quota changed.

A commit that updates or deletes a `users` or `tokens` row, or writes a `quotas` row, increments a counter after it
commits. The counter lives in a small file every process on the state folder maps into memory, so reading it is
one memory read (no system call: a request's thread keeps the interpreter lock, which matters under load) and an
increment by one process — the console, or an operator's `sf console …` — is seen by the others at their next read.
Readers compare it with the value they remembered; any difference means something may have been revoked, disabled or
capped, so whatever they cached from those tables is stale. Increments are serialised with a file lock, so none is
lost.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from .models import Quota, Token, User

__all__ = ["ChangeSignal", "watch_accounts"]

_UPDATED_OR_DELETED = (User, Token)  # a new user or token revokes nothing; a change or removal may
_ANY_WRITE = (Quota,)  # a first quota row replaces the defaults
_FLAG = "starforge.accounts_changed"
_WIDTH = 8  # one unsigned 64-bit counter


class ChangeSignal:
    """A counter shared through a mapped file: `stamp()` differs after every `bump()` by any process."""

    def __init__(self, path: Path | None) -> None:
        """Map the counter file at `path` (created if missing); None keeps a counter private to this process."""
        self.path = path
        self._lock = threading.Lock()
        if path is None:
            self._map = mmap.mmap(-1, _WIDTH)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            if os.fstat(fd).st_size < _WIDTH:
                os.ftruncate(fd, _WIDTH)  # zeros; two processes doing this at once agree
            self._map = mmap.mmap(fd, _WIDTH)
        finally:
            os.close(fd)  # the mapping stays

    def stamp(self) -> int:
        """Return the current change count (one memory read)."""
        return int.from_bytes(self._map[:_WIDTH], "little")

    def bump(self) -> None:
        """Record one change, visible to this process at once and to the others at their next `stamp()`."""
        with self._lock:
            if self.path is None:
                self._increment()
                return
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd is closed
                self._increment()
            finally:
                os.close(fd)

    def _increment(self) -> None:
        self._map[:_WIDTH] = ((self.stamp() + 1) % 2**64).to_bytes(_WIDTH, "little")


def _changes_accounts(session: Session) -> bool:
    touched = [*session.dirty, *session.deleted]
    return any(isinstance(row, _UPDATED_OR_DELETED + _ANY_WRITE) for row in touched) or any(
        isinstance(row, _ANY_WRITE) for row in session.new)


def watch_accounts(factory: sessionmaker[Session], signal: ChangeSignal) -> None:
    """Bump `signal` after each commit of a session from `factory` that changed accounts, tokens or quotas
    (ORM changes and bulk UPDATE/DELETE statements alike)."""

    @event.listens_for(factory, "after_flush")
    def _after_flush(session: Session, _context: Any) -> None:
        if _changes_accounts(session):
            session.info[_FLAG] = True

    @event.listens_for(factory, "do_orm_execute")
    def _on_execute(state: Any) -> None:
        if (state.is_update or state.is_delete) and state.bind_mapper is not None and issubclass(
                state.bind_mapper.class_, _UPDATED_OR_DELETED + _ANY_WRITE):
            state.session.info[_FLAG] = True

    @event.listens_for(factory, "after_commit")
    def _after_commit(session: Session) -> None:
        if session.info.pop(_FLAG, False):
            signal.bump()

    @event.listens_for(factory, "after_rollback")
    def _after_rollback(session: Session) -> None:
        session.info.pop(_FLAG, None)
