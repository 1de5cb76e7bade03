"""The executor conformance suite: every executor must pass it — local (sandboxed and not), Slurm and Ray.

Jobs are small programs that honour the executor contract the way `forge-launch` does: they write their exit
record to `$FORGE_EXIT_FILE` before exiting, which is how a re-attached job's final status is known. Requests name
job-side paths from `executor.job_paths(run_dir)`, as the console does; files the test watches (`BEAT`, `WAIT_FOR`)
are in the run's out folder, named by job-side paths, since a cluster engine may start the job in a copy of its work
folder.
The Slurm and Ray engines come from `tests/integration/engines.py` (markers `slurm` and `ray`; their services from
`scripts/services.sh up`). The stand-in engine (`tests/standin_engine.py`) is added the way any new engine is: it is
registered in the engine registry, named by a settings file, and built by the console's `build_engines`, which
loops over the registry; the suite then runs on what the console built.
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

from starforge.console.background import build_engines
from starforge.console.settings import load_settings
from starforge.engines import (
    ExecState,
    Executor,
    Isolation,
    IsolationConfig,
    LaunchRequest,
    LocalExecutor,
    registry,
)
from tests import standin_engine
from tests.conftest import require_bubblewrap
from tests.integration import engines

STORAGE = Path(tempfile.mkdtemp(prefix="sf-conformance-"))


def _sandboxed() -> Executor:
    require_bubblewrap()
    isolation = Isolation.prepare(STORAGE, IsolationConfig(memory_per_slot=2 * 1024**3), total_slots=4)
    return LocalExecutor({"cpu": 4}, gpus={}, isolation=isolation)


def _local_lost(executor: Executor, request: LaunchRequest) -> str:
    ref = executor.submit(request)
    _started(executor, ref)
    os.killpg(int(ref.split(":")[1]), signal.SIGKILL)
    _wait(executor, ref)
    return ref


def _standin() -> Executor:
    """The stand-in engine as a console builds it: registered, named by its settings file, made by `build_engines`."""
    config = Path(tempfile.mkdtemp(prefix="standin-", dir=STORAGE)) / "console.yaml"
    config.write_text("executor: standin\nexecutors:\n  standin: {slots: 4}\n", encoding="utf-8")
    with registry.registered(standin_engine.ENGINE):
        settings = load_settings(config, state_dir=config.parent / "state")
        built = build_engines(settings, Isolation.none(STORAGE))
    return built.engines["standin"]


def _standin_lost(executor: Executor, request: LaunchRequest) -> str:
    ref = executor.submit(request)  # standin:local:<pid>:…
    _started(executor, ref)
    os.killpg(int(ref.split(":")[2]), signal.SIGKILL)
    _wait(executor, ref)
    return ref


EXECUTORS: dict[str, Callable[[], Executor]] = {
    "local": lambda: LocalExecutor({"cpu": 4}, gpus={}),
    "local-sandbox": _sandboxed,
    "slurm": engines.slurm_executor,
    "ray": engines.ray_executor,
    "standin": _standin,
}
# how a job vanishes without a record on each engine: its process group is killed (local), the engine forgets it
LOST: dict[str, Callable[[Executor, LaunchRequest], str]] = {
    "local": _local_lost,
    "local-sandbox": _local_lost,
    "slurm": engines.slurm_lost,
    "ray": engines.ray_lost,
    "standin": _standin_lost,
}
MARKS = {"slurm": [pytest.mark.slurm], "ray": [pytest.mark.ray]}
ENGINE_PARAMS = [pytest.param(name, marks=MARKS.get(name, [])) for name in sorted(EXECUTORS)]

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
    if os.environ.get("BEAT"):
        import subprocess
        beat = "import os, time\\nwhile True:\\n    open(os.environ['BEAT'], 'a').write('.')\\n    time.sleep(0.02)"
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


@pytest.fixture(params=ENGINE_PARAMS)
def executor(request: pytest.FixtureRequest) -> Executor:
    return EXECUTORS[request.param]()


def _request(executor: Executor, tmp: Path, name: str, *, watched: tuple[str, ...] = (), **env: str) -> LaunchRequest:
    """Return a request running PROGRAM; each name in `watched` becomes an env variable naming a file of out/."""
    run_dir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=STORAGE)) / tmp.name / name
    work = run_dir / "work"
    work.mkdir(parents=True)
    (run_dir / "out").mkdir()
    (work / "job.py").write_text(PROGRAM)
    paths = executor.job_paths(run_dir)
    env.update({variable: f"{paths.out}/{variable.lower()}" for variable in watched})
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
    request = _request(executor, tmp_path, "stop", watched=("BEAT",), SLEEP="600")
    ref = executor.submit(request)
    beat = request.run_dir / "out" / "beat"
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


@pytest.mark.parametrize("name", ENGINE_PARAMS)
def test_restart_reattaches_live_jobs_and_accounts_for_ended_ones(name: str, tmp_path: Path) -> None:
    make = EXECUTORS[name]
    first = make()
    request = _request(first, tmp_path / name, "live", watched=("WAIT_FOR",), EXIT="0")
    live = first.submit(request)
    go = request.run_dir / "out" / "wait_for"
    try:
        ended = first.submit(_request(first, tmp_path / name, "ended", EXIT="5"))
        _wait(first, ended)
        _started(first, live)  # a cluster engine may still queue it (pending is right, but not what is tested here)
        second = make()  # a new console process: no in-memory state about these jobs
        states = second.reconcile([live, ended])
        assert states[live].state == "running"
        assert states[ended].state == "exited" and states[ended].exit_code == 5
        go.touch()  # the live job ends only now
        assert _wait(second, live).exit_code == 0
    finally:
        go.touch()  # never leave it waiting when the test fails


@pytest.mark.parametrize("name", ENGINE_PARAMS)
def test_a_job_that_vanished_without_a_record_is_lost(name: str, tmp_path: Path) -> None:
    make = EXECUTORS[name]
    first = make()
    ref = LOST[name](first, _request(first, tmp_path / name, "victim", SLEEP="600"))
    second = make()
    assert second.reconcile([ref])[ref].state == "lost"
