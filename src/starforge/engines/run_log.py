"""Where every engine's job writes its output and exit record in the run folder, and opening that output safely.

The job can write its logs folder (and may plant a link or a FIFO there), while the console reads and appends to
`output.log` with its own rights: the file is only ever opened without following a link, and only when it is a
regular file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["EXIT_FILE", "OUTPUT", "TOKEN_FILE", "open_log", "read_log", "write_private"]

OUTPUT = "output.log"  # `<run>/logs/output.log`: the job's stdout and stderr
EXIT_FILE = "exit.json"  # `<run>/logs/exit.json`: the exit record forge-launch writes
TOKEN_FILE = "run-token"  # `<run>/run-token`, mode 0600, outside what the job sees: its run token for cluster engines
_CHUNK = 4 * 1024 * 1024
_SAFE = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_log(path: Path, *, append: bool = False) -> int:
    """Return a descriptor of the log file `path` (created when appending); raise OSError when it is a link, a
    FIFO or anything but a regular file."""
    flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT) if append else os.O_RDONLY
    fd = os.open(path, flags | _SAFE, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd


def read_log(run_dir: Path, offset: int) -> tuple[bytes, int]:
    """Return the output written to the run's log since `offset` (at most 4 MiB) and the offset to continue from;
    nothing when the log is missing or is not a regular file."""
    try:
        fd = open_log(run_dir / "logs" / OUTPUT)
    except OSError:
        return b"", offset
    try:
        data = os.pread(fd, _CHUNK, offset)
    finally:
        os.close(fd)
    return data, offset + len(data)


def write_private(path: Path, text: str, mode: int) -> None:
    """Write a fresh file of the console's (never through a link left at `path`) with `mode`."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
