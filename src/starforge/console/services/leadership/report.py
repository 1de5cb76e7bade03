"""What `GET /api/console` answers: this console process (its state folder's id, host, pid) and the process that leads
the scheduler of its database, with its epoch and how long ago it last beat.

Tier: use case (it reads in a transaction of its own).
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from .... import __version__
from ..context import Runtime
from .record import current

__all__ = ["console_report"]


def console_report(*, rt: Runtime) -> dict[str, Any]:
    """Return this process and the leader (None before the first election), and whether this process leads."""
    with rt.db.read() as db:
        leader = current(db)
    me = {"console_id": rt.identity, "host": socket.gethostname(), "pid": os.getpid(), "version": __version__}
    shown: dict[str, Any] | None = None
    if leader is not None:
        shown = {**leader.to_dict(), "heartbeat_age_seconds": round(max(0.0, time.time() - leader.heartbeat), 3)}
        shown.pop("holder")
    leads = leader is not None and leader.pid == me["pid"] and leader.host == me["host"]
    return {"this": {**me, "leads": leads}, "leader": shown}
