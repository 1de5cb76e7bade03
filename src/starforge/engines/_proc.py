"""Process facts read from /proc: a process's start time, its descendants and their resident memory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProcessTable", "start_ticks"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _stat_fields(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()


def start_ticks(pid: int) -> int | None:
    """Return the start time of a live process in clock ticks since boot (None when gone or a zombie)."""
    fields = _stat_fields(pid)
    if not fields or fields[0] == "Z":  # a zombie has finished
        return None
    return int(fields[19]) if len(fields) > 19 else None


@dataclass(frozen=True)
class _Entry:
    ppid: int
    rss_bytes: int
    comm: str


class ProcessTable:
    """One consistent-enough reading of every process: parent, resident memory and name, by pid."""

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        self._children: dict[int, list[int]] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                raw = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue  # ended while we read
            head, _, tail = raw.rpartition(")")
            fields = tail.split()
            if len(fields) < 22 or fields[0] == "Z":
                continue
            pid = int(name)
            entry = _Entry(int(fields[1]), int(fields[21]) * _PAGE, head.partition("(")[2])
            self._entries[pid] = entry
            self._children.setdefault(entry.ppid, []).append(pid)

    def descendants(self, pid: int) -> list[int]:
        """Return every live descendant of `pid`, parents before their children."""
        out: list[int] = []
        frontier = list(self._children.get(pid, ()))
        while frontier:
            child = frontier.pop(0)
            out.append(child)
            frontier.extend(self._children.get(child, ()))
        return out

    def children(self, pid: int) -> list[int]:
        """Return the live children of `pid`."""
        return list(self._children.get(pid, ()))

    def name(self, pid: int) -> str:
        """Return the command name of `pid` ("" when unknown)."""
        entry = self._entries.get(pid)
        return entry.comm if entry else ""

    def tree_rss(self, pid: int) -> int:
        """Return the resident memory in bytes of `pid` and all its descendants."""
        total = self._entries[pid].rss_bytes if pid in self._entries else 0
        return total + sum(self._entries[p].rss_bytes for p in self.descendants(pid) if p in self._entries)
