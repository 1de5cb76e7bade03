"""Where every engine's job writes its output and exit record in the run folder, and reading that output safely.

The log file's name and its safe opening are the wire's (`starforge.wire.open_run_log`: never through a link or a
FIFO the job planted), shared with the console's log store.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from ..wire import RUN_LOG, open_run_log

__all__ = ["EXIT_FILE", "OUTPUT", "TOKEN_FILE", "fresh_log", "open_log", "read_log", "write_private"]

OUTPUT = RUN_LOG  # `<run>/logs/output.log`: the job's stdout and stderr (the format is `starforge.wire`'s)
EXIT_FILE = "exit.json"  # `<run>/logs/exit.json`: the exit record forge-launch writes
TOKEN_FILE = "run-token"  # `<run>/run-token`, mode 0600, outside what the job sees: its run token for cluster engines
_CHUNK = 4 * 1024 * 1024
open_log = open_run_log  # the engines' name for it


def fresh_log(run_dir: Path) -> Path:
    """Make `<run>/logs/output.log` a plain file of its own for an engine that appends to it outside the sandbox, as
    its own user (a Ray entrypoint's `>>`, slurmd's `--output`): whatever a job of an earlier attempt left there in
    its place (a link or a hard link to a file of the node's, a folder, a FIFO) is removed first. Return its path."""
    path = run_dir / "logs" / OUTPUT
    try:
        info = path.lstat()
    except FileNotFoundError:
        info = None
    if info is not None and (not stat.S_ISREG(info.st_mode) or info.st_nlink > 1):
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(path)
        else:
            path.unlink()
    os.close(open_log(path, append=True))
    return path


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
