"""The executor conformance suite: every executor must pass it (here: the local executor, sandboxed and not).

Jobs are small programs that honour the executor contract the way `forge-launch` does: they write their exit
record to `$FORGE_EXIT_FILE` before exiting, which is how a re-attached job's final status is known. Requests name
job-side paths from `executor.job_paths(run_dir)`, as the console does.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from starforge.console.executors import (
    ExecState,
    Executor,
    Isolation,
    IsolationConfig,
    LaunchRequest,
    LocalExecutor,
)
from tests.conftest import require_bubblewrap

STORAGE = Path(tempfile.mkdtemp(prefix="sf-conformance-"))


def _sandboxed() -> Executor:
    require_bubblewrap()
    isolation = Isolation.prepare(STORAGE, IsolationConfig(memory_per_slot=2 * 1024**3), total_slots=4)
    return LocalExecutor({"cpu": 4}, gpus={}, isolation=isolation)


EXECUTORS: dict[str, Callable[[], Executor]] = {
    "local": lambda: LocalExecutor({"cpu": 4}, gpus={}),
    "local-sandbox": _sandboxed,
}

PROGRAM = textwrap.dedent(
    """
    import json, os, signal, sys, time
    def record(code, sig=None):
        with open(os.environ["FORGE_EXIT_FILE"], "w") as f:
            json.dump({"exit_code": code, "signal": sig}, f)
    def on_term(signum, frame):
        print("got SIGTERM", flush=True)
        if os.environ.get("IGNORE_TERM") == "1":
            return
        record(143, signum)
        sys.exit(143)
    signal.signal(signal.SIGTERM, on_term)
    print("hello from", os.environ.get("JOB_NAME"), flush=True)
    if os.environ.get("SPAWN") == "1":
        import subprocess
        beat = "import os, time\\nwhile True:\\n    open('beat', 'a').write('.')\\n    time.sleep(0.02)"
        subprocess.Popen([sys.executable, "-c", beat], start_new_session=True)
    for i in range(int(os.environ.get("LINES", "0"))):
        print(f"line {i}", flush=True)
    time.sleep(float(os.environ.get("SLEEP", "0")))
    while os.environ.get("WAIT_FOR") and not os.path.exists(os.environ["WAIT_FOR"]):  # until the test says so
        time.sleep(0.02)
    code = int(os.environ.get("EXIT", "0"))
    record(code)
    sys.exit(code)
    """
)


@pytest.fixture(params=sorted(EXECUTORS))
def executor(request: pytest.FixtureRequest) -> Executor:
    return EXECUTORS[request.param]()


def _request(executor: Executor, tmp: Path, name: str, **env: str) -> LaunchRequest:
    run_dir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=STORAGE)) / tmp.name / name
    work = run_dir / "work"
    work.mkdir(parents=True)
    (work / "job.py").write_text(PROGRAM)
    paths = executor.job_paths(run_dir)
    return LaunchRequest(run_id=name, run_dir=run_dir, argv=(sys.executable, "job.py"),
                         env={"PATH": os.environ["PATH"], "JOB_NAME": name, **env}, cwd=paths.work)


def _wait(executor: Executor, ref: str, timeout: float = 30) -> ExecState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = executor.poll(ref)
        if state.finished:
            return state
        time.sleep(0.05)
    raise AssertionError("the job did not finish")


def _all_logs(executor: Executor, ref: str) -> bytes:
    data, offset = b"", 0
    while True:
        chunk, offset = executor.logs(ref, offset)
        if not chunk:
            return data
        data += chunk


def _started(executor: Executor, ref: str, timeout: float = 30) -> None:
    """Wait until the job has printed its first line (its SIGTERM handler is in place by then)."""
    deadline = time.monotonic() + timeout
    while b"hello from" not in executor.logs(ref, 0)[0]:
        assert time.monotonic() < deadline, "the job did not start"
        time.sleep(0.02)


def test_success_and_logs(executor: Executor, tmp_path: Path) -> None:
    ref = executor.submit(_request(executor, tmp_path, "ok", LINES="3"))
    state = _wait(executor, ref)
    assert state.state == "exited" and state.exit_code == 0
    assert _all_logs(executor, ref) == b"hello from ok\nline 0\nline 1\nline 2\n"


def test_failure_exit_code(executor: Executor, tmp_path: Path) -> None:
    ref = executor.submit(_request(executor, tmp_path, "bad", EXIT="3"))
    state = _wait(executor, ref)
    assert state.state == "exited" and state.exit_code == 3


def test_logs_are_incremental(executor: Executor, tmp_path: Path) -> None:
    ref = executor.submit(_request(executor, tmp_path, "inc", LINES="50"))
    _wait(executor, ref)
    first, offset = executor.logs(ref, 0)
    rest, end = executor.logs(ref, 10)
    assert first[10:] == rest and end == offset
    assert executor.logs(ref, end) == (b"", end)


def test_stop_ends_every_process_of_the_job(executor: Executor, tmp_path: Path) -> None:
    request = _request(executor, tmp_path, "stop", SLEEP="600", SPAWN="1")
    ref = executor.submit(request)
    beat = request.run_dir / "work" / "beat"
    deadline = time.monotonic() + 10
    while not beat.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    executor.stop(ref, grace=5)
    state = _wait(executor, ref)
    assert state.state == "exited" and state.exit_code == 143
    # the grandchild left the job's process group (a new session): it must still be gone once the job has ended
    for _ in range(60):
        size = beat.stat().st_size
        time.sleep(0.1)
        if beat.stat().st_size == size:
            break
    else:
        pytest.fail("a process of the job kept running after the stop")
    assert b"got SIGTERM" in _all_logs(executor, ref)


def test_stop_escalates_to_sigkill_after_the_grace_period(executor: Executor, tmp_path: Path) -> None:
    ref = executor.submit(_request(executor, tmp_path, "stubborn", SLEEP="600", IGNORE_TERM="1"))
    _started(executor, ref)
    started = time.monotonic()
    executor.stop(ref, grace=1)
    state = _wait(executor, ref)
    assert state.finished and state.signal == signal.SIGKILL
    assert time.monotonic() - started >= 0.9


@pytest.mark.parametrize("name", sorted(EXECUTORS))
def test_restart_reattaches_live_jobs_and_accounts_for_ended_ones(name: str, tmp_path: Path) -> None:
    make = EXECUTORS[name]
    first = make()
    request = _request(first, tmp_path / name, "live", WAIT_FOR="go", EXIT="0")
    live = first.submit(request)
    ended = first.submit(_request(first, tmp_path / name, "ended", EXIT="5"))
    _wait(first, ended)
    second = make()  # a new console process: no in-memory state about these jobs
    states = second.reconcile([live, ended])
    assert states[live].state == "running"
    assert states[ended].state == "exited" and states[ended].exit_code == 5
    (request.run_dir / "work" / "go").touch()  # the live job ends only now
    assert _wait(second, live).exit_code == 0


@pytest.mark.parametrize("name", sorted(EXECUTORS))
def test_a_job_that_vanished_without_a_record_is_lost(name: str, tmp_path: Path) -> None:
    make = EXECUTORS[name]
    first = make()
    ref = first.submit(_request(first, tmp_path / name, "victim", SLEEP="600"))
    pid = int(ref.split(":")[1])
    _started(first, ref)
    os.killpg(pid, signal.SIGKILL)
    _wait(first, ref)
    second = make()
    assert second.reconcile([ref])[ref].state == "lost"
