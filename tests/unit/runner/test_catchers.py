"""Signalling only the processes of a job that catch SIGUSR1: the `SigCgt:` mask, read on real processes too."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from starforge.runner._catchers import catches, caught_mask, send_to_catchers, session_members

STATUS = "Name:\tpython3\nState:\tS (sleeping)\nSigPnd:\t0000000000000000\nSigBlk:\t0000000000000000\n" \
         "SigIgn:\t0000000001001000\nSigCgt:\t{mask}\nCapInh:\t0000000000000000\n"

# a session leader that catches SIGUSR1 and starts a process that does not; it prints that process's pid when both
# are ready, then "got" once the signal came
CATCHER = r"""
import signal, subprocess, sys, threading
got = threading.Event()
signal.signal(signal.SIGUSR1, lambda signum, frame: got.set())
other = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE)
other.stdout.readline()
print(other.pid, flush=True)
print("got" if got.wait(30) else "timeout", flush=True)
"""


def _fake_proc(root: Path, pid: int, *, mask: str, session: int, state: str = "S", comm: str = "py (x) y") -> None:
    folder = root / str(pid)
    folder.mkdir()
    (folder / "status").write_text(STATUS.format(mask=mask))
    (folder / "stat").write_text(f"{pid} ({comm}) {state} 1 {session} {session} 0 -1 4194560 0 0\n")


def _pending(pid: int, signum: int) -> bool:
    status = Path(f"/proc/{pid}/status").read_text()
    masks = [int(line.split(":")[1], 16) for line in status.splitlines() if line.startswith(("SigPnd", "ShdPnd"))]
    return any(mask & (1 << (signum - 1)) for mask in masks)


def test_the_caught_mask_is_read_in_hexadecimal_bit_n_minus_one_for_signal_n(tmp_path: Path) -> None:
    assert caught_mask(STATUS.format(mask="0000000000000200")) == 1 << 9
    assert caught_mask("Name:\tx\n") is None and caught_mask("SigCgt:\tzz\n") is None
    _fake_proc(tmp_path, 10, mask="0000000180004202", session=10)  # SIGINT (2), SIGUSR1 (10), SIGTERM (15)…
    _fake_proc(tmp_path, 11, mask="0000000180004002", session=10)  # …the same without SIGUSR1
    assert catches(10, signal.SIGUSR1, proc=tmp_path) and catches(10, signal.SIGTERM, proc=tmp_path)
    assert not catches(11, signal.SIGUSR1, proc=tmp_path)
    assert not catches(12, signal.SIGUSR1, proc=tmp_path)  # gone: never signalled


def test_session_members_are_read_after_the_command_name_and_exclude_zombies(tmp_path: Path) -> None:
    _fake_proc(tmp_path, 20, mask="0", session=20, comm="a) 3 4 5 (b")  # a name that looks like fields
    _fake_proc(tmp_path, 21, mask="0", session=20)
    _fake_proc(tmp_path, 22, mask="0", session=20, state="Z")
    _fake_proc(tmp_path, 23, mask="0", session=99)
    (tmp_path / "self").mkdir()
    assert session_members(20, proc=tmp_path) == [20, 21]


def test_only_the_process_that_catches_sigusr1_is_signalled_and_the_other_survives() -> None:
    leader = subprocess.Popen([sys.executable, "-c", CATCHER], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    assert leader.stdout is not None
    other = int(leader.stdout.readline())
    try:
        assert set(session_members(leader.pid)) == {leader.pid, other}
        assert send_to_catchers(leader.pid, signal.SIGUSR1) == [leader.pid]
        assert leader.stdout.readline().strip() == "got"
        assert leader.wait(10) == 0
        # the process without a handler was never sent the signal: alive, and nothing pending for it
        assert other in session_members(leader.pid) and not _pending(other, signal.SIGUSR1)
    finally:
        leader.kill()
        with contextlib.suppress(ProcessLookupError):
            os.kill(other, signal.SIGKILL)
        leader.wait(10)
