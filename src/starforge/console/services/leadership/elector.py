"""The election loop of one console process: take the leader lock when it is free, then the next epoch, and run what
a leader runs (`on_elected(epoch)` returns how to stop it); beat while leading, and stop leading the moment the lock
or the epoch is lost. Non-leaders try again every `retry` seconds.

Tier: use case (it owns the transactions of the `leadership` row).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ...store import Database
from .locks import LeaderLock
from .record import Member, beat, take

__all__ = ["Elector"]

log = logging.getLogger("starforge.leadership")

RETRY_SECONDS = 0.5
BEAT_SECONDS = 1.0


class Elector:
    """Elect this process leader of `db` when `lock` is free, and keep `on_elected`'s work running only while it
    leads."""

    def __init__(self, db: Database, lock: LeaderLock, me: Member, on_elected: Callable[[int], Callable[[], None]],
                 *, retry: float = RETRY_SECONDS, beat_every: float = BEAT_SECONDS) -> None:
        self.db = db
        self.lock = lock
        self.me = me
        self.on_elected = on_elected
        self.retry = retry
        self.beat_every = beat_every
        self.epoch = 0  # this process's epoch while it leads (0: it does not)
        self._stop_leading: Callable[[], None] | None = None
        self._stopping = threading.Event()
        self._turn = threading.Lock()  # one election step at a time (the thread's, `start`'s and `stop`'s)
        self._thread = threading.Thread(target=self._run, name="starforge-election", daemon=True)

    @property
    def leading(self) -> bool:
        """Return whether this process leads now."""
        return self.epoch != 0

    def start(self) -> None:
        """Try once at once (a lone console leads, and has reconciled, before it answers), then keep trying."""
        self._step()
        self._thread.start()

    def stop(self) -> None:
        """Stop what the leader runs, let the lock go and end the loop."""
        self._stopping.set()
        self._thread.join(timeout=15)
        with self._turn:
            self._resign("the console is stopping")

    def _run(self) -> None:
        while not self._stopping.wait(self.beat_every if self.leading else self.retry):
            try:
                self._step()
            except Exception:  # an election step must never end the loop; the next one retries
                log.exception("leader election step failed")

    def _step(self) -> None:
        with self._turn:
            if self._stopping.is_set():
                return
            if self.leading:
                self._keep()
            elif self.lock.acquire():
                self._lead()

    def _lead(self) -> None:
        try:
            with self.db.write() as db:
                epoch = take(db, self.me, now=time.time())
        except Exception:
            self.lock.release()
            raise
        self.epoch = epoch
        log.warning("this process (%s, pid %d on %s) leads the scheduler: epoch %d", self.me.holder, self.me.pid,
                    self.me.host, epoch)
        try:
            self._stop_leading = self.on_elected(epoch)
        except Exception:
            self._resign("starting the leader's work failed")
            raise

    def _keep(self) -> None:
        alive = self.lock.held()
        try:
            ours = alive and self._beat()
        except Exception:
            log.exception("the leader's heartbeat failed")
            ours = self.lock.held() and self._beat_once_more()
        if not ours:
            self._resign("the lead was lost" if alive else "the leader lock was lost")

    def _beat(self) -> bool:
        with self.db.write() as db:
            return beat(db, epoch=self.epoch, now=time.time())

    def _beat_once_more(self) -> bool:
        try:
            return self._beat()
        except Exception:
            return False

    def _resign(self, why: str) -> None:
        stop, self._stop_leading = self._stop_leading, None
        was = self.epoch
        self.epoch = 0
        if stop is not None:
            try:
                stop()
            except Exception:
                log.exception("stopping the leader's work failed")
        self.lock.release()
        if was:
            log.warning("this process no longer leads (epoch %d): %s", was, why)
