"""The run's log file: where every engine's job writes its output (`<run>/logs/output.log`), and opening it safely.

The job can write its logs folder (and may plant a link or a FIFO there), while the console reads and appends to
the log with its own rights: the file is only ever opened without following a link, and only when it is a regular
file. The engines write the log, the console's log store reads and appends to it: both use this one format.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

__all__ = ["ATTEMPT_MARK", "RUN_LOG", "open_run_log", "run_log_path"]

RUN_LOG: Final = "output.log"  # `<run>/logs/output.log`: the job's stdout and stderr
# how the console starts a later attempt's part of the log: `[starforge] ──── attempt N of <run> (…): … ────`
ATTEMPT_MARK: Final = "[starforge] ──── attempt "
_SAFE = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def run_log_path(run_dir: str | Path) -> Path:
    """Return the log file of the run kept at `run_dir`."""
    return Path(run_dir) / "logs" / RUN_LOG


def open_run_log(path: Path, *, append: bool = False) -> int:
    """Return a descriptor of the log file `path` (created when appending); raise OSError when it is a link, a
    FIFO or anything but a regular file."""
    flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT) if append else os.O_RDONLY
    fd = os.open(path, flags | _SAFE, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd
