"""A console killed with SIGKILL while jobs run, then restarted, loses no job and leaves none stuck."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import BACKENDS, ConsoleProcess, make_console, unique
from tests.integration.helpers import admitted, bundle, spec_for, submit

TERMINAL = {"succeeded", "failed", "stopped"}
AWAIT_GO = "while [ ! -e go ]; do sleep 0.1; done\n"  # a job that works until the test creates `go` in its folder


def _custom_job(api: httpx.Client, name: str, script: str) -> str:
    spec = spec_for(api, "custom/custom", exp=f"experiments/{name}", series="cpu", gpus=1)
    spec["spec"]["framework"]["image"] = "nvcr.io/team/trainer:1.0"
    spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
    response = submit(api, spec, data=bundle({f"experiments/{name}/train.sh": script}))
    return admitted(response, "submitted")  # each console has a slot for every job its test starts


def _status(api: httpx.Client, job: str) -> dict[str, Any]:
    return dict(api.get("/api/job", params={"id": job}).json())


def _wait_for(api: httpx.Client, jobs: list[str], statuses: set[str], timeout: float = 90) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    current: dict[str, str] = {}
    while time.monotonic() < deadline:
        current = {job: _status(api, job)["status"] for job in jobs}
        if all(s in statuses for s in current.values()):
            return current
        time.sleep(0.2)
    raise AssertionError(f"jobs did not reach {statuses}: {current}")


def _pid_file(console: ConsoleProcess, user: str, name: str, job: str) -> Path:
    return console.state_dir / "runs" / user / name / job / "work" / "pid"


def _release(console: ConsoleProcess, user: str, name: str, job: str) -> None:
    (_pid_file(console, user, name, job).parent / "go").touch()


def _wait_for_exit_record(console: ConsoleProcess, user: str, name: str, job: str, timeout: float = 60) -> None:
    """Wait until the job's launcher has written its exit record (how a re-attached job's end is known)."""
    record = console.state_dir / "runs" / user / name / job / "logs" / "exit.json"
    deadline = time.monotonic() + timeout
    while not record.exists():
        assert time.monotonic() < deadline, f"{name} wrote no exit record"
        time.sleep(0.05)


def _kill_job(console: ConsoleProcess, user: str, name: str, job: str) -> None:
    """Kill every process of a job, as a crash of the machine's OOM killer would, leaving no exit record."""
    run_dir = console.state_dir / "runs" / user / name / job
    if console.sandboxed:  # the sandbox's process group holds its PID namespace's init: killing it ends them all
        os.killpg(json.loads((run_dir / "executor.json").read_text())["pid"], signal.SIGKILL)
        return
    script_pid = int((run_dir / "work" / "pid").read_text())
    launcher_pid = int(Path(f"/proc/{script_pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.killpg(script_pid, signal.SIGKILL)
    os.kill(launcher_pid, signal.SIGKILL)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sigkill_restart_loses_nothing(backend: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    # restarts.after_loss 0: the vanished job is failed (a resumed one is tests/e2e/test_resume.py's case)
    console = make_console(tmp_path_factory, backend, config={"capacity": {"cpu": 4}, "stop_grace_seconds": 2,
                                                              "image_allowlist": ["nvcr.io"],
                                                              "restarts": {"after_loss": 0}})
    console.start()
    user = unique("rs")
    api = console.client(console.token_for(user))
    try:
        short = _custom_job(api, "short", f"echo $$ > pid\necho start\n{AWAIT_GO}echo done-short\n")
        victim = _custom_job(api, "victim", "echo $$ > pid\necho start\nsleep 600\n")
        # after the restart the long job reports through its channel: the restarted console's new socket reaches it
        report = (f"{sys.executable} -c 'from starforge.runner import report; "
                  "report.log({\"after/restart\": 1.0}, step=1); report.finish()'\n")
        long = _custom_job(api, "long", f"echo $$ > pid\necho start\n{AWAIT_GO}{report}echo done-long\n")
        _wait_for(api, [short, victim, long], {"running"})
        for name, job in (("short", short), ("victim", victim), ("long", long)):
            pid_file = _pid_file(console, user, name, job)
            deadline = time.monotonic() + 20
            while not pid_file.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
        console.stop(kill=True)  # SIGKILL: no cleanup, no goodbye
        _kill_job(console, user, "victim", victim)
        _release(console, user, "short", short)  # the short job ends while the console is down
        _wait_for_exit_record(console, user, "short", short)
        console.start()
        api.close()
        api = console.client(console.token_for(user))
        _release(console, user, "long", long)  # the long one only after the restart: its end is watched live
        final = _wait_for(api, [short, victim, long], TERMINAL, timeout=60)
        assert final == {short: "succeeded", victim: "failed", long: "succeeded"}
        assert "vanished" in _status(api, victim)["message"] or "gone" in _status(api, victim)["message"]
        rows = api.get("/api/jobs/mine", params={"limit": 50}).json()["jobs"]
        assert {r["job_ref"] for r in rows} == {short, victim, long}
        logs = httpx.get(f"{console.url}/api/job/logs/stream", params={"id": long, "tail": 0},
                         headers=api.headers, timeout=30).text
        assert "done-long" in logs and "event: end" in logs
        assert "after/restart" in api.get(f"/api/jobs/{long}/metrics").json()["latest"]
    finally:
        api.close()
        console.stop()


def test_stop_terminates_a_running_job(tmp_path_factory: pytest.TempPathFactory) -> None:
    console = make_console(tmp_path_factory, "sqlite", config={"capacity": {"cpu": 2}, "stop_grace_seconds": 2,
                                                              "image_allowlist": ["nvcr.io"]})
    console.start()
    user = unique("st")
    api = console.client(console.token_for(user))
    try:
        job = _custom_job(api, "sleeper", "echo start\nsleep 600\n")
        _wait_for(api, [job], {"running"})
        response = api.post("/api/job/stop", params={"id": job}).json()
        assert response["stopped"] is True
        assert _wait_for(api, [job], TERMINAL, timeout=30) == {job: "stopped"}
        again = api.post("/api/job/stop", params={"id": job}).json()
        assert again == {"stopped": False, "status": "stopped", "job_ref": job}
    finally:
        api.close()
        console.stop()
