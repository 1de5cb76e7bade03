"""Recipe runtimes on a real console: a job prepares its runtime (build output in its log), runs on it, and the next
jobs reuse it; a failed build fails its job with the installer's error; a framework the console cannot run on the
job's series is refused at admission. The runtime needs a tiny local package, written here as a wheel (offline)."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from starforge.engines.runtimes import RuntimeCache
from tests.integration.conftest import DEFAULT_CONFIG, SF, ConsoleProcess, make_console, unique
from tests.integration.helpers import admitted, bundle, spec_for, submit, wait_for_end

TEMPLATE = Path(__file__).resolve().parents[2] / "src/starforge/recipes/builtin/tinyrl/grpo/template/config.yaml"
RUNTIME = "tinyrl-1.0.0"


def _wheel(folder: Path, name: str, version: str) -> Path:
    """Write a pure-Python wheel of package `name` (one module) and return its path."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: starforge-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in {**files, f"{info}/RECORD": "\n".join(record) + "\n"}.items():
            archive.writestr(path, text)
    return wheel


def _console(tmp_path_factory: pytest.TempPathFactory, requirement: str) -> ConsoleProcess:
    base = tmp_path_factory.mktemp("runtimes")
    # the deployment adds `requirement` to tinyrl's runtime (numpy and PyYAML), so it must be built
    runtimes = {"cache_dir": str(base / "cache"), "hub_cache": str(base / "hub"), "installer": "pip",
                "requires": {RUNTIME: [requirement]}}
    proc = make_console(tmp_path_factory, "sqlite", config={**DEFAULT_CONFIG, "runtimes": runtimes})
    proc.start()
    return proc


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    wheel = _wheel(tmp_path_factory.mktemp("wheels"), "sfprobe", "0.1")
    proc = _console(tmp_path_factory, f"sfprobe @ {wheel.as_uri()}")
    yield proc
    proc.stop()


def _api(console: ConsoleProcess) -> httpx.Client:
    return console.client(console.token_for(unique("rt")))


def _toy(api: httpx.Client, name: str) -> str:
    spec = spec_for(api, "tinyrl/grpo", exp=f"experiments/{name}", hyperparams={"max_num_steps": 5})
    response = submit(api, spec, data=bundle({f"experiments/{name}/config.yaml": TEMPLATE.read_text()}))
    return admitted(response, "submitted")  # 2 CPU slots: at most 2 jobs of a test at once




def _transitions(row: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["to"], e["reason"]) for e in row["events"] if e["from"] != e["to"]]


def _log(api: httpx.Client, job: str) -> str:
    """The job's whole log as `sf job logs` reads it (the log stream, replayed from the start)."""
    response = api.get("/api/job/logs/stream", params={"id": job, "tail": 0})
    return "".join(line[6:] + "\n" for line in response.text.splitlines() if line.startswith("data: "))


def test_jobs_prepare_one_runtime_run_on_it_and_later_jobs_reuse_it(built: ConsoleProcess) -> None:
    with _api(built) as api:
        first, second = _toy(api, "first"), _toy(api, "second")  # both wait for the one build
        rows = [wait_for_end(api, timeout=300, job=first), wait_for_end(api, timeout=300, job=second)]
        for row in rows:
            assert row["status"] == "succeeded", (row["message"], _log(api, row["run_id"])[-3000:])
            steps = _transitions(row)
            assert [s for s, _ in steps] == ["submitted", "preparing", "running", "succeeded"], steps
            assert steps[1][1] == "building runtime tinyrl-1.0.0 (python 3.11, cpu)"
            assert "on runtime tinyrl-1.0.0 (python 3.11, cpu)" in steps[2][1]
        for job in (first, second):
            log = _log(api, job)
            assert "[runtime] building runtime tinyrl-1.0.0 (python 3.11, cpu) with pip" in log
            assert "sfprobe-0.1" in log  # the installer's own output
        records = RuntimeCache(Path(built.config_file.read_text().split("cache_dir: ")[1].split()[0])).records()
        assert [(r.runtime_id, r.kind) for r in records] == [(RUNTIME, "cpu")]  # built once, for both
        third = wait_for_end(api, timeout=300, job=_toy(api, "third"))
        assert third["status"] == "succeeded", third
        assert [s for s, _ in _transitions(third)] == ["submitted", "running", "succeeded"]  # no second build
        assert "[runtime]" not in _log(api, third["run_id"])


def test_a_failed_build_fails_its_job_with_the_installers_error(tmp_path_factory: pytest.TempPathFactory) -> None:
    proc = _console(tmp_path_factory, "sfabsent @ file:///nonexistent/sfabsent-0.1-py3-none-any.whl")
    try:
        with _api(proc) as api:
            job = _toy(api, "broken")
            row = wait_for_end(api, timeout=300, job=job)
            assert row["status"] == "failed", row
            reason = row["message"]
            assert reason.startswith("the runtime tinyrl-1.0.0 (python 3.11, cpu) could not be built: ERROR:"), reason
            assert "No such file or directory: '/nonexistent/sfabsent-0.1-py3-none-any.whl'" in reason
            assert "[runtime] the build failed: ERROR:" in _log(api, job)
    finally:
        proc.stop()


def test_a_gpu_only_framework_is_refused_at_admission_on_a_cpu_series(built: ConsoleProcess) -> None:
    with _api(built) as api:
        spec = spec_for(api, "nemo-rl/grpo", exp="experiments/nemo", series="cpu")
        verdict = api.post("/api/admission/check", json={"spec": spec, "profile": "cpu"}).json()
        refused = submit(api, spec)
    assert not verdict["ok"]
    problems = [p for p in verdict["problems"] if p["field"] == "spec.framework.kind"]
    assert [p["code"] for p in problems] == ["framework_unavailable"], verdict["problems"]
    assert problems[0]["message"] == "nemo-rl runs on GPUs only, and series 'cpu' has none"
    assert problems[0]["hint"]
    assert refused.status_code == 400
    assert [p for p in refused.json()["problems"] if p["code"] == "framework_unavailable"] == problems


def _runtime_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SF, "console", "runtime", *args], capture_output=True, text=True, timeout=600)


def test_operators_build_and_list_runtimes_without_a_console(built: ConsoleProcess, tmp_path: Path) -> None:
    config = str(built.config_file)  # the console's own configuration: the same cache
    _wait_built(built)
    done = _runtime_cli("build", RUNTIME, "--kind", "cpu", "--config", config, "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["runtime_id"] == RUNTIME and record["kind"] == "cpu"
    assert record["interpreter"] == f"{record['path']}/bin/python" and Path(record["interpreter"]).exists()
    assert "is built" in done.stderr  # found in the cache the console built it into: nothing was built again
    listed = json.loads(_runtime_cli("ls", "--config", config, "--json").stdout)
    assert [r["path"] for r in listed["runtimes"]] == [record["path"]]
    unknown = _runtime_cli("build", "nope-1.0", "--config", config)
    assert unknown.returncode == 2 and "no recipe of the served catalog uses runtime 'nope-1.0'" in unknown.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump({"runtimes": {
        "cache_dir": str(tmp_path / "cache"), "hub_cache": str(tmp_path / "hub"), "installer": "pip",
        "requires": {RUNTIME: ["sfabsent @ file:///nonexistent/sfabsent-0.1-py3-none-any.whl"]}}}))
    failed = _runtime_cli("build", RUNTIME, "--kind", "cpu", "--config", str(broken), "--state-dir", str(tmp_path / "s"))
    assert failed.returncode == 1
    assert "could not be built: ERROR: Could not install packages" in failed.stderr
    assert "[runtime]" not in failed.stderr and "Processing /nonexistent" in failed.stderr  # the installer's output


def _wait_built(console: ConsoleProcess) -> None:
    """Make sure the module's console has built its runtime (when this test runs alone)."""
    with _api(console) as api:
        assert wait_for_end(api, timeout=300, job=_toy(api, "cli"))["status"] == "succeeded"
