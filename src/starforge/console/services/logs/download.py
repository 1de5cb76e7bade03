"""A run's whole log as a file to download: the same job lookup as the stream, read in chunks, never whole.

Tier: use case (one read transaction for the job, then the log file). What the caller may not see is a 404, as for
the stream (`log_stream.open_stream`); the file is opened as the stream opens it (`starforge.wire.open_run_log`:
never through a link or a FIFO the job planted), and the bytes are the log's own (line ends, escape sequences and
all), up to the size it had when the download started.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ....wire import open_run_log
from ..accounts.credentials import UserView
from ..context import Runtime
from ..jobs import reads as job_reads
from . import store as logs

__all__ = ["CHUNK", "LogDownload", "open_download"]

CHUNK = 256 * 1024


@dataclass(frozen=True)
class LogDownload:
    """An opened download: the file name to offer, the log file (None: no log yet) and its size when opened."""

    filename: str
    path: Path | None
    size: int

    def chunks(self) -> Iterator[bytes]:
        """Yield the log's bytes up to `size`, `CHUNK` at a time (blocking: iterate it in a worker thread)."""
        if self.path is None or self.size == 0:
            return
        try:
            fd = open_run_log(self.path)
        except OSError:  # replaced by a link or a FIFO since: nothing is read through it
            return
        try:
            offset = 0
            while offset < self.size:
                data = os.pread(fd, min(CHUNK, self.size - offset), offset)
                if not data:
                    break
                offset += len(data)
                yield data
        finally:
            os.close(fd)


def open_download(rt: Runtime, *, user: UserView, ref: str) -> LogDownload:
    """Open the log of a job the caller may see (404 otherwise) for download as `<job>.log`; a job that has not
    written a log yet downloads as an empty file. Blocking: call it in the threadpool."""
    _status, _final, run_dir = job_reads.log_state(rt, user=user, ref=ref)
    name = f"{ref.strip()}.log"
    path = logs.log_path(run_dir) if run_dir else None
    if path is None:
        return LogDownload(name, None, 0)
    try:
        fd = open_run_log(path)
    except OSError:  # not written yet, or a link or FIFO the job planted
        return LogDownload(name, None, 0)
    try:
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    return LogDownload(name, path, size)
