"""A job can write its logs folder: the console never reads or appends through a link (or a FIFO) planted there."""

from __future__ import annotations

import os
from pathlib import Path

from starforge.console.services.logs.store import LogLocks, append, read_from, tail_offset
from starforge.engines.run_log import OUTPUT, read_log


def test_a_planted_link_or_fifo_is_neither_read_nor_written(tmp_path: Path) -> None:
    secret = tmp_path / "console.db"
    secret.write_bytes(b"hashes\n")
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    log = run / "logs" / OUTPUT
    log.symlink_to(secret)
    assert read_log(run, 0) == (b"", 0)
    assert read_from(log, 0) == (b"", 0) and tail_offset(log, 10) == 0
    append(LogLocks(), run, "written through?\n")
    assert secret.read_bytes() == b"hashes\n"
    log.unlink()
    os.mkfifo(log)  # opening a FIFO would block the request thread
    assert read_log(run, 0) == (b"", 0) and read_from(log, 0) == (b"", 0)
    log.unlink()
    append(LogLocks(), run, "line\n")
    assert read_log(run, 0) == (b"line\n", 5)
