"""Signal the processes of a session that catch a signal, and only those (read from `/proc/<pid>/status`, Linux).

SIGUSR1's default action ends a process, so a process of the job that installed no handler for it must never get
it: the mask of caught signals (`SigCgt:`, hexadecimal, bit `n - 1` for signal `n`) tells which processes did.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["catches", "caught_mask", "send_to_catchers", "session_members"]

_PROC = Path("/proc")


def caught_mask(status: str) -> int | None:
    """Return the `SigCgt:` mask of a `/proc/<pid>/status` text, or None when it has no readable one."""
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name == "SigCgt":
            try:
                return int(value.strip(), 16)
            except ValueError:
                return None
    return None


def catches(pid: int, signum: int, *, proc: Path = _PROC) -> bool:
    """Return True when process `pid` has a handler installed for `signum` (False when gone or unreadable)."""
    try:
        status = (proc / str(pid) / "status").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    mask = caught_mask(status)
    return mask is not None and bool(mask & (1 << (signum - 1)))


def session_members(sid: int, *, proc: Path = _PROC) -> list[int]:
    """Return the pids of the live processes whose session id is `sid`, in increasing order."""
    members = []
    try:
        entries = list(proc.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue  # gone since the listing
        # `pid (comm) state ppid pgrp session …`: comm may hold spaces and parentheses, so split after the last `)`
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) < 4 or fields[0] in ("Z", "X"):
            continue
        with contextlib.suppress(ValueError):
            if int(fields[3]) == sid:
                members.append(int(entry.name))
    return sorted(members)


def send_to_catchers(sid: int, signum: int, *, proc: Path = _PROC) -> list[int]:
    """Send `signum` to each process of session `sid` that catches it; return the pids signalled."""
    sent = []
    for pid in session_members(sid, proc=proc):
        if not catches(pid, signum, proc=proc):
            continue
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            continue
        sent.append(pid)
    return sent
