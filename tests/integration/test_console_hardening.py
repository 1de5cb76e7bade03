"""Secure defaults and failure handling of a real console: launch failures, disabled accounts, wall-time limits,
the image allowlist's default, the port of the config file, and the admin token printed only once bound."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.integration.conftest import SF, ConsoleProcess, free_port, make_console, unique
from tests.integration.helpers import admitted, bundle, spec_for, submit, wait_for_status

TERMINAL = {"succeeded", "failed", "stopped"}
PROFILES = [
    {"name": "cpu", "series": "cpu", "num_nodes": 1, "gpus_per_node": 1, "label": "CPU slot"},
    {"name": "short", "series": "cpu", "num_nodes": 1, "gpus_per_node": 1, "label": "CPU, 2 s", "max_hours": 0.0005},
]


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    proc = make_console(tmp_path_factory, "sqlite", config={"capacity": {"cpu": 2}, "stop_grace_seconds": 1,
                                                            "image_allowlist": ["nvcr.io"], "profiles": PROFILES})
    proc.start()
    yield proc
    proc.stop()


def _custom(api: httpx.Client, name: str, script: str, profile: str = "cpu") -> httpx.Response:
    spec = spec_for(api, "custom/custom", exp=f"experiments/{name}", series="cpu", gpus=1)
    spec["spec"]["framework"]["image"] = "nvcr.io/team/trainer:1.0"
    spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
    return submit(api, spec, data=bundle({f"experiments/{name}/train.sh": script}), profile=profile)


def _wait(api: httpx.Client, job: str, statuses: set[str], timeout: float = 60) -> dict[str, Any]:
    return wait_for_status(api, job, statuses, timeout)


def test_a_job_that_cannot_be_launched_fails_with_the_reason_and_frees_its_slot(console: ConsoleProcess) -> None:
    user = unique("lf")
    api = console.client(console.token_for(user))
    try:
        (console.state_dir / "runs").mkdir(exist_ok=True)
        (console.state_dir / "runs" / user).write_text("a file where the user's run folder belongs")
        broken = _custom(api, "broken", "echo never\n").json()["job_id"]
        row = _wait(api, broken, TERMINAL)
        assert row["status"] == "failed" and "could not be launched" in row["message"], row
        (console.state_dir / "runs" / user).unlink()
        jobs = [_custom(api, f"after{i}", "echo fine\n").json()["job_id"] for i in range(2)]
        assert all(_wait(api, job, TERMINAL)["status"] == "succeeded" for job in jobs)  # both slots are free
    finally:
        api.close()


def test_disabling_an_account_revokes_its_tokens_and_stops_its_jobs(console: ConsoleProcess) -> None:
    user = unique("dis")
    api = console.client(console.token_for(user))
    admin = console.client(console.admin_token)
    try:
        job = _custom(api, "long", "echo started\nsleep 120\n").json()["job_id"]
        _wait(api, job, {"running"})
        assert admin.patch(f"/api/admin/users/{user}/disabled", params={"disabled": "true"}).status_code == 200
        assert api.get("/api/whoami").status_code == 401
        row = _wait(admin, job, TERMINAL)
        assert row["status"] == "stopped" and "disabled" in row["message"], row
        assert admin.patch(f"/api/admin/users/{user}/disabled", params={"disabled": "false"}).status_code == 200
        assert api.get("/api/whoami").status_code == 401  # re-enabling does not bring revoked tokens back
    finally:
        api.close()
        admin.close()


def test_a_job_over_its_wall_time_fails_with_the_reason(console: ConsoleProcess) -> None:
    api = console.client(console.token_for(unique("wt")))
    try:
        job = _custom(api, "slow", "echo started\nsleep 120\n", profile="short").json()["job_id"]
        row = _wait(api, job, TERMINAL)
        assert row["status"] == "failed" and "wall-time limit" in row["message"], row
    finally:
        api.close()


def test_without_an_allowlist_every_image_is_refused_until_a_registry_is_allowed(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    closed = make_console(tmp_path_factory, "sqlite", config={"capacity": {"cpu": 1}})
    closed.start()
    api = closed.client(closed.token_for(unique("img")))
    try:
        problems = _custom(api, "img", "echo hi\n").json()["problems"]
        assert [p["field"] for p in problems] == ["spec.framework.image"]
        assert "image_allowlist" in problems[0]["hint"] and "--allow-registry" in problems[0]["hint"]
    finally:
        api.close()
        closed.stop()
    closed.extra_args = ("--allow-registry", "nvcr.io")
    closed.start()
    api = closed.client(closed.token_for(unique("img")))
    try:
        admitted(_custom(api, "img", "echo hi\n"), "submitted")  # the one slot of a fresh console
    finally:
        api.close()
        closed.stop()


def test_the_port_of_the_config_file_is_honoured(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "console.yaml"
    config.write_text(yaml.safe_dump({"port": port, "capacity": {"cpu": 1}}))
    proc = subprocess.Popen([SF, "console", "up", "--state-dir", str(tmp_path / "state"), "--config", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None and "admin token" in proc.stdout.readline()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/api/version", timeout=1).status_code == 200
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            pytest.fail(f"nothing answers on the configured port {port}")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_the_admin_token_is_printed_only_once_the_port_is_bound(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        failed = subprocess.run([SF, "console", "up", "--state-dir", str(state), "--port", str(port)],
                                capture_output=True, text=True, timeout=60)
    assert failed.returncode != 0 and "admin token" not in failed.stdout
    assert "cannot listen" in failed.stderr
    console = ConsoleProcess(state)  # the same state folder: the token was never shown, so it is shown now
    console.start()
    try:
        assert console.admin_token.startswith("sfp_")
        with console.client(console.admin_token) as admin:
            assert admin.get("/api/whoami").json()["username"] == "admin"
    finally:
        console.stop()


def test_a_console_that_cannot_sandbox_jobs_refuses_to_start_and_says_how_to_fix_it(tmp_path: Path) -> None:
    bin_dir = Path(SF).parent  # the environment's own commands, but no bubblewrap on PATH
    done = subprocess.run([SF, "console", "up", "--state-dir", str(tmp_path / "state"), "--port", str(free_port())],
                          capture_output=True, text=True, timeout=60, env={"PATH": str(bin_dir), "HOME": str(tmp_path)})
    assert done.returncode != 0 and "admin token" not in done.stdout
    assert "cannot be sandboxed" in done.stderr and "apt-get install bubblewrap" in done.stderr
    assert "sandbox: off" in done.stderr  # the explicit way out is named, not taken


def test_an_unsandboxed_console_warns_loudly_at_every_start(tmp_path_factory: pytest.TempPathFactory) -> None:
    console = make_console(tmp_path_factory, "sqlite", config={"executors": {"local": {"sandbox": "off"}}})
    for _ in range(2):
        console.start()
        console.stop()
    log = console.log_file.read_text()
    assert log.count("WARNING: the job sandbox is OFF") == 2
