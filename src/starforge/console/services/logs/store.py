"""The run log store: one append-only file per run (`<run>/logs/output.log`), read by byte offset.

Event ids of the log stream are the byte offset just after the event's data, so they are strictly increasing and a
client resumes exactly where it stopped (`from=<id>`). Nothing is ever trimmed.

Tier: query (a file store: no database, no transaction). The stream that follows a log is `log_stream`. The file's
name and its safe opening are the wire's (`starforge.wire.open_run_log`), which the engines write by too; the
append locks are the console runtime's (`Runtime.logs`, one `LogLocks` per process), and each append also holds
the file's `flock`, so the workers of one console never interleave a chunk either.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from ....wire import open_run_log as open_log
from ....wire import run_log_path

__all__ = ["LogLocks", "append", "log_path", "read_from", "tail_offset"]


class LogLocks:
    """The append locks of one console process, one per log file: two ingest requests never interleave a chunk."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def of(self, path: Path) -> threading.Lock:
        """Return the lock of the log file `path` (made on first use)."""
        with self._guard:
            return self._locks.setdefault(str(path), threading.Lock())


def log_path(run_dir: str | Path) -> Path:
    """Return the log file of a run directory."""
    return run_log_path(run_dir)


def append(locks: LogLocks, run_dir: str | Path, text: str) -> int:
    """Append text (e.g. ingested chunks) to a run's log under its lock of `locks`; return the new size."""
    path = log_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8", errors="replace")
    with locks.of(path):
        try:
            fd = open_log(path, append=True)
        except OSError:  # the job replaced its log by a link or a FIFO: nothing is written through it
            return 0
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # another worker process appending to the same log waits (released at close)
            os.write(fd, data)
            return os.fstat(fd).st_size
        finally:
            os.close(fd)


def tail_offset(path: Path, lines: int) -> int:
    """Return the offset where the last `lines` complete or partial lines start (0 = the whole file)."""
    if lines <= 0:
        return 0
    try:
        handle = os.fdopen(open_log(path), "rb")
    except OSError:
        return 0
    with handle:
        size = os.fstat(handle.fileno()).st_size
        position = size
        seen = 0
        block = 64 * 1024
        # a trailing newline ends the last line; it does not start a new one
        handle.seek(max(0, size - 1))
        skip_last = handle.read(1) == b"\n"
        while position > 0:
            start = max(0, position - block)
            handle.seek(start)
            chunk = handle.read(position - start)
            for index in range(len(chunk) - 1, -1, -1):
                if chunk[index] == 0x0A:
                    if skip_last and start + index == size - 1:
                        continue
                    seen += 1
                    if seen == lines:
                        return start + index + 1
            position = start
    return 0


def read_from(path: Path, offset: int, limit: int = 256 * 1024) -> tuple[bytes, int]:
    """Return up to `limit` bytes from `offset`, cut after the last newline when there is one; and the next offset."""
    try:
        fd = open_log(path)
    except OSError:  # missing, or a link or FIFO the job planted
        return b"", offset
    try:
        data = os.pread(fd, limit, offset)
    finally:
        os.close(fd)
    cut = data.rfind(b"\n")
    if cut >= 0:
        data = data[: cut + 1]
    return data, offset + len(data)
