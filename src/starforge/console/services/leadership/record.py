"""The `leadership` row: who leads (`current`), taking the lead (`take`: the epoch, the fencing token, grows by one),
the leader's heartbeat (`beat`) and the fence every write of the leader's scheduler passes first (`check`).

Tier: query and use case on the caller's session (the caller owns the transaction). On PostgreSQL `check` takes a
share lock on the row and `take` an update lock, so a process can take the lead only between the transactions of
the previous leader: once `take` has committed, every later write of the old leader finds another epoch and aborts.
On SQLite every write transaction is already exclusive (BEGIN IMMEDIATE).
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ...store.models import Leadership

__all__ = ["Leader", "LostLead", "Member", "beat", "check", "current", "take"]

ROW = 1


class LostLead(RuntimeError):
    """Raised by a fenced write when the stored epoch is no longer its own: another process leads now."""

    def __init__(self, mine: int, stored: int) -> None:
        super().__init__(f"this process lost the lead (its epoch {mine}, the stored one {stored}): the write is refused")
        self.mine, self.stored = mine, stored


@dataclass(frozen=True)
class Member:
    """One console process that may lead: its own id (new at every start), its state folder's id, host and pid."""

    holder: str
    console_id: str
    host: str
    pid: int

    @classmethod
    def this_process(cls, console_id: str) -> Member:
        """Return this process as a member (a fresh holder id)."""
        return cls(secrets.token_hex(8), console_id, socket.gethostname(), os.getpid())


@dataclass(frozen=True)
class Leader:
    """The stored leader: who holds the lead, since when, its last heartbeat and its epoch (0: nobody ever led)."""

    epoch: int
    holder: str
    console_id: str
    host: str
    pid: int
    since: float
    heartbeat: float

    def to_dict(self) -> dict[str, object]:
        """Return the leader as the API shows it."""
        return {"epoch": self.epoch, "holder": self.holder, "console_id": self.console_id, "host": self.host,
                "pid": self.pid, "since": self.since, "heartbeat": self.heartbeat}


def current(db: Session) -> Leader | None:
    """Return the stored leader (None before the first election)."""
    row = db.get(Leadership, ROW)
    if row is None or row.epoch == 0:
        return None
    return Leader(row.epoch, row.holder, row.console_id, row.host, row.pid, row.since, row.heartbeat)


def take(db: Session, me: Member, *, now: float) -> int:
    """Record `me` as the leader with the next epoch and return that epoch (the caller holds the leader lock)."""
    row = db.scalar(select(Leadership).where(Leadership.id == ROW).with_for_update())
    if row is None:
        row = Leadership(id=ROW, epoch=0)
        db.add(row)
    row.epoch = (row.epoch or 0) + 1
    row.holder, row.console_id, row.host, row.pid = me.holder, me.console_id, me.host, me.pid
    row.since = row.heartbeat = now
    db.flush()
    return row.epoch


def check(db: Session, *, epoch: int) -> None:
    """Raise LostLead unless the stored epoch is `epoch` (a share lock on the row until the caller commits)."""
    stored = db.scalar(select(Leadership.epoch).where(Leadership.id == ROW).with_for_update(read=True))
    if stored != epoch:
        raise LostLead(epoch, stored or 0)


def beat(db: Session, *, epoch: int, now: float) -> bool:
    """Record the leader's heartbeat at `now`; return False when the stored epoch is no longer `epoch`."""
    done = db.execute(update(Leadership).where(Leadership.id == ROW, Leadership.epoch == epoch)
                      .values(heartbeat=now))
    return bool(getattr(done, "rowcount", 0))
