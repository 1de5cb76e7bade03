"""Job uids for a console running as root, taken from a configured range the way systemd's DynamicUser does.

A uid is free when no running job holds it and no process of this machine runs as it. The running jobs of one
account share its uid (each in its own sandbox, which shows it none of the others' folders or processes), so they
can write the account's hub cache together; accounts never share one, and the uid returns to the pool when the
account's last job ends. A uid an account of the machine holds is never handed out (packages allocate system
accounts inside systemd's range: Debian's `slurm` is 64030), so a job never runs as somebody.
"""

from __future__ import annotations

import os
import pwd
import threading
from collections.abc import Iterable
from pathlib import Path

__all__ = ["DEFAULT_RANGE", "UidPool", "check_range", "chown_tree", "give_to_job", "reclaim_tree"]

DEFAULT_RANGE = (61184, 65519)  # systemd's range for dynamic users


def _uids_in_use() -> set[int]:
    used: set[int] = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                used.add(os.stat(f"/proc/{name}").st_uid)
            except OSError:
                continue
    return used


def _account_uids(first: int, last: int) -> dict[int, str]:
    return {p.pw_uid: p.pw_name for p in pwd.getpwall() if first <= p.pw_uid <= last}


def check_range(first: int, last: int) -> str:
    """Return why the uid range is unusable ("" when it is fine): privileged, or every uid of it an account's."""
    if first < 1000 or last < first:
        return f"uid_range {first}-{last} must be a range of unprivileged uids (1000 or more)"
    taken = _account_uids(first, last)
    if len(taken) > last - first:
        names = sorted(f"{name} ({uid})" for uid, name in taken.items())
        return f"every uid of uid_range {first}-{last} belongs to an account of this machine: {', '.join(names[:5])}"
    return ""


class UidPool:
    """Hand out uids to running jobs, one per account; `hold` re-attached jobs' uids after a restart."""

    def __init__(self, first: int, last: int) -> None:
        self.first, self.last = first, last
        self._count: dict[int, int] = {}  # uid -> running jobs holding it
        self._owner: dict[int, str] = {}  # uid -> the account whose jobs hold it ("" when unknown)
        self._lock = threading.Lock()

    def take(self, owner: str = "") -> int:
        """Return the uid of `owner`'s running jobs, else one no job holds and no process runs as.

        Raise RuntimeError when the range is exhausted. Without an owner every job gets a uid of its own.
        """
        with self._lock:
            shared = next((uid for uid, who in self._owner.items() if owner and who == owner), None)
            if shared is not None:
                self._count[shared] += 1
                return shared
            busy = set(self._count) | _uids_in_use() | set(_account_uids(self.first, self.last))
            for uid in range(self.first, self.last + 1):
                if uid not in busy:
                    self._count[uid] = 1
                    self._owner[uid] = owner
                    return uid
        raise RuntimeError(f"every uid of the range {self.first}-{self.last} is in use")

    def hold(self, uid: int, owner: str = "") -> None:
        """Mark a uid as held by one more job of `owner` (re-attached after a restart)."""
        with self._lock:
            self._count[uid] = self._count.get(uid, 0) + 1
            if owner or uid not in self._owner:
                self._owner[uid] = owner

    def release(self, uid: int) -> None:
        """Return a job's hold on its uid once its processes are gone; the uid is free when none is left."""
        with self._lock:
            left = self._count.get(uid, 0) - 1
            if left > 0:
                self._count[uid] = left
            else:
                self._count.pop(uid, None)
                self._owner.pop(uid, None)


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Give a folder tree to `uid:gid` without following symbolic links (the tree may hold a job's files)."""
    for current, dirs, files in os.walk(root, followlinks=False):
        os.chown(current, uid, gid, follow_symlinks=False)
        for name in (*dirs, *files):
            os.chown(os.path.join(current, name), uid, gid, follow_symlinks=False)


def give_to_job(run_dir: Path, caches: Iterable[Path], uid: int) -> None:
    """Give a run's work, out, logs and tmp folders to the uid its job runs as, and the account's caches too (when
    another uid had them before)."""
    for name in ("work", "out", "logs", "tmp"):
        chown_tree(run_dir / name, uid, uid)
    for cache in caches:
        cache.mkdir(parents=True, exist_ok=True)
        if cache.stat().st_uid != uid:
            chown_tree(cache, uid, uid)


def reclaim_tree(root: Path) -> None:
    """Give a finished job's folder tree back to this process's user, readable by jobs that use it as an input.

    Links are never followed; set-id bits are dropped; write permission stays with the owner alone.
    """
    uid, gid = os.getuid(), os.getgid()
    for current, dirs, files in os.walk(root, followlinks=False):
        _reclaim(current, uid, gid, directory=True)
        for name in dirs:
            _reclaim(os.path.join(current, name), uid, gid, directory=True)
        for name in files:
            _reclaim(os.path.join(current, name), uid, gid, directory=False)


def _reclaim(path: str, uid: int, gid: int, *, directory: bool) -> None:
    try:
        info = os.lstat(path)
        os.chown(path, uid, gid, follow_symlinks=False)
        if os.path.islink(path):
            return
        executable = directory or bool(info.st_mode & 0o100)
        os.chmod(path, 0o755 if executable else 0o644)
    except OSError:
        return  # removed meanwhile, or a special file: nothing of ours to fix
