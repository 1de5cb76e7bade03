"""`starforge.runner.preempt`: a job learns of "checkpoint, then stop" by SIGUSR1 or the file, and where it resumes."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from types import FrameType

import pytest

from starforge.runner import preempt
from starforge.runner.preempt import PreemptWatch, ResumePoint, resume_point


def test_the_preempt_file_asks_even_without_a_handler(tmp_path: Path) -> None:
    marker = tmp_path / "preempt"
    watch = PreemptWatch({"FORGE_PREEMPT_FILE": str(marker)})
    assert not watch.requested()
    marker.write_text("preempted\n")
    assert watch.requested() and not watch.signalled
    assert not PreemptWatch({}).requested()  # outside forge-launch: nothing to look at


def test_sigusr1_sets_the_flag_and_chains_the_handler_installed_before() -> None:
    calls: list[int] = []

    def earlier(signum: int, frame: FrameType | None) -> None:
        calls.append(signum)

    before = signal.signal(signal.SIGUSR1, earlier)
    try:
        watch = PreemptWatch({})
        assert watch.install() and not watch.install()  # idempotent
        os.kill(os.getpid(), signal.SIGUSR1)
        assert watch.requested() and watch.signalled
        assert calls == [signal.SIGUSR1]
        watch.uninstall()
        assert signal.getsignal(signal.SIGUSR1) is earlier and not watch.installed
    finally:
        signal.signal(signal.SIGUSR1, before)


def test_uninstall_puts_back_the_default_action() -> None:
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL
    watch = PreemptWatch({})
    watch.install()
    assert signal.getsignal(signal.SIGUSR1) != signal.SIG_DFL
    watch.uninstall()
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL


def test_a_handler_is_only_installed_from_the_main_thread() -> None:
    results: list[bool] = []
    worker = threading.Thread(target=lambda: results.append(PreemptWatch({}).install()))
    worker.start()
    worker.join()
    assert results == [False]
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL


def test_the_resume_point_comes_from_the_console_variables() -> None:
    env = {"FORGE_RESUME_FROM": "/job/out/checkpoints/checkpoint-4", "FORGE_RESUME_STEP": "4", "FORGE_ATTEMPT": "2"}
    assert resume_point(env) == ResumePoint("/job/out/checkpoints/checkpoint-4", 4, 2)
    assert resume_point({"FORGE_RESUME_FROM": "/ckpt", "FORGE_RESUME_STEP": "x"}) == ResumePoint("/ckpt", None, None)
    assert resume_point({"FORGE_RESUME_FROM": " ", "FORGE_RESUME_STEP": "3"}) is None
    assert resume_point({}) is None


def test_the_process_wide_watch_reads_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "preempt"
    monkeypatch.setenv("FORGE_PREEMPT_FILE", str(marker))
    assert preempt.default() is preempt.default() and not preempt.requested()
    marker.touch()
    assert preempt.requested()
