"""A job can write its logs folder: the console never reads or appends through a link (or a FIFO) planted there."""

from __future__ import annotations

import os
from pathlib import Path

from starforge.console.services.logs.store import LogLocks, append, read_from, tail_offset
from starforge.engines.run_log import OUTPUT, fresh_log, read_log


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


def test_a_fresh_log_never_leads_an_engine_to_a_file_an_earlier_attempt_planted(tmp_path: Path) -> None:
    victim = tmp_path / "node-file"
    victim.write_text("the node's own\n")
    logs = tmp_path / "run" / "logs"
    logs.mkdir(parents=True)
    for plant in (lambda p: p.symlink_to(victim), lambda p: os.link(victim, p), lambda p: p.mkdir(),
                  lambda p: os.mkfifo(p)):
        target = logs / "output.log"
        plant(target)
        path = fresh_log(tmp_path / "run")
        with path.open("ab") as log:  # what the engine then does, as its own user
            log.write(b"job output\n")
        assert victim.read_text() == "the node's own\n"
        assert path.is_file() and not path.is_symlink() and path.stat().st_nlink == 1
        path.unlink()
    (logs / "output.log").write_text("attempt 1\n")
    fresh_log(tmp_path / "run")
    assert (logs / "output.log").read_text() == "attempt 1\n"  # an earlier attempt's own log is kept
