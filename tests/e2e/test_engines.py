"""The tinyrl job, submitted with `sf` alone, runs to success through Slurm and through Ray: its log reaches
`sf job logs`, its checkpoint is registered, `sf job status --json` names the engine and its id, and the engine
itself confirms the run (`scontrol` shows COMPLETED, the Ray Jobs API SUCCEEDED). On both engines a job runs in the
node sandbox: the network probe reaches nothing of the machine, the isolation probe finds nothing of the console. On the Slurm cluster of two real
nodes (and a third that never comes up) a three-node `h200:24` job waits with Slurm's reason, and stops cleanly.

The engines are the services of `scripts/services.sh up` (markers `slurm` and `ray`; skipped loudly without them,
failed under CI). One console per engine, started as an operator would: `sf console up --executor …`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import _service_env, require_service
from tests.e2e.conftest import Researcher, make_researcher
from tests.integration import netprobe
from tests.integration.conftest import DEFAULT_CONFIG, ConsoleProcess, make_console
from tests.integration.helpers import admitted, bundle, spec_for, submit

ISOLATION_PROBE = (Path(__file__).parents[1] / "integration" / "isolation_probe.py").read_text()

ENGINES = [pytest.param("slurm", marks=pytest.mark.slurm), pytest.param("ray", marks=pytest.mark.ray)]
SLURM_SERIES = {"cpu": {"gres": "none"}, "h200": {"gres": "gpu", "gpus_per_node": 8}}


def _slurm_env() -> dict[str, str]:
    require_service("Slurm", "SLURM_AVAILABLE", "run `scripts/services.sh up`")
    conf = _service_env().get("SLURM_CONF", "")
    return {"SLURM_CONF": conf} if conf else {}


@pytest.fixture(scope="module", params=ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        tuple[str, ConsoleProcess]]:
    """A console whose default engine is Slurm (or Ray), started with `sf console up --executor …`."""
    name = request.param
    config: dict[str, Any] = dict(DEFAULT_CONFIG)
    env: dict[str, str] = {}
    if name == "slurm":
        env = _slurm_env()
        config["executors"] = {"slurm": {"series": SLURM_SERIES}}
        args: tuple[str, ...] = ("--executor", "slurm")
    else:
        address = require_service("Ray", "RAY_ADDRESS", "run `scripts/services.sh up`")
        args = ("--executor", "ray", "--ray-address", address)
    proc = make_console(tmp_path_factory, "sqlite", config=config, extra_args=args)
    proc.env.update(env)
    proc.start()
    yield name, proc
    proc.stop()


def _engine_confirms(name: str, engine_ref: str) -> str:
    """Return the run's final state as the engine itself reports it."""
    if name == "slurm":
        shown = subprocess.run(["scontrol", "-o", "show", "job", engine_ref], capture_output=True, text=True,
                               env={**os.environ, **_slurm_env()}, check=True).stdout
        found = re.search(r"JobState=(\S+)", shown)
        return found.group(1) if found else shown
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(require_service("Ray", "RAY_ADDRESS", "run `scripts/services.sh up`"))
    return str(client.get_job_status(engine_ref).value)


def test_tinyrl_runs_to_success_through_the_engine(engine: tuple[str, ConsoleProcess], tmp_path: Path) -> None:
    name, console = engine
    me: Researcher = make_researcher(console, tmp_path)
    assert me.sf("new", "toy", "--method", "tinyrl/grpo").returncode == 0
    me.commit("toy")
    submitted = me.sf("submit", "toy", "--profile", "cpu:1", "--set", "max_num_steps=10",
                       "--set", "checkpoint_save_period=5")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()

    followed = me.sf("job", "logs", job_id, timeout=300)
    assert followed.returncode == 0, followed.stderr + followed.stdout
    assert "step" in followed.stdout and "succeeded" in followed.stderr

    row = me.json("job", "status", job_id)
    assert row["status"] == "succeeded" and row["executor"] == name and row["engine_ref"]
    assert _engine_confirms(name, row["engine_ref"]) == ("COMPLETED" if name == "slurm" else "SUCCEEDED")
    artifacts = me.json("job", "artifacts", job_id)
    kinds = {a["kind"] for a in artifacts["artifacts"]}
    assert "checkpoint" in kinds, artifacts


@pytest.mark.parametrize("engine", ENGINES[:1], indirect=True)
def test_a_job_larger_than_the_live_nodes_waits_with_slurms_reason_and_stops(engine: tuple[str, ConsoleProcess],
                                                           tmp_path: Path) -> None:
    _, console = engine
    me = make_researcher(console, tmp_path)
    with console.client(console.admin_token) as admin:  # the default quota allows 16 GPUs at once
        answer = admin.post("/api/admin/quotas", json={"username": me.user, "max_concurrent_gpus": 24})
        assert answer.status_code == 200, answer.text
    assert me.sf("new", "wide", "--method", "tinyrl/grpo").returncode == 0
    me.commit("wide")
    submitted = me.sf("submit", "wide", "--profile", "h200:24")  # three nodes: the third is never up
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    deadline = time.monotonic() + 60
    row = me.json("job", "status", job_id)
    while "queued by slurm" not in row.get("message", ""):
        assert time.monotonic() < deadline, row
        time.sleep(0.3)
        row = me.json("job", "status", job_id)
    assert row["status"] == "submitted" and row["executor"] == "slurm"
    assert re.search(r"queued by slurm as \d+: \S", row["message"]), row["message"]  # Slurm's reason follows
    assert me.sf("job", "stop", job_id).returncode == 0
    while row["status"] != "stopped":
        assert time.monotonic() < deadline + 60, row
        time.sleep(0.3)
        row = me.json("job", "status", job_id)
    assert _engine_confirms("slurm", row["engine_ref"]) == "CANCELLED"


def test_a_job_on_a_cluster_node_reaches_no_service_of_the_machine_and_still_reports(
        engine: tuple[str, ConsoleProcess]) -> None:
    """The network probe of the local sandbox, on the node sandbox of Slurm and of Ray: the node's helper gives the
    job its own network and relays its ingest (Ray's Jobs API, its GCS and the console are among the targets)."""
    _name, console = engine
    netprobe.probe_as(console, f"netprobe{os.getpid()}")


def test_a_hostile_job_on_a_cluster_node_finds_nothing_of_the_console_or_of_another_run(
        engine: tuple[str, ConsoleProcess]) -> None:
    """The isolation probe of the local sandbox, on a Slurm node and on a Ray node: no state folder, database,
    other run, other job's token or console path (Slurm's SLURM_SUBMIT_DIR once named the run folder) is visible,
    and nothing lands in the state folder; a root console's job runs as a uid of the pool."""
    name, console = engine
    user = f"hostile{os.getpid()}"
    marker = f"planted-{uuid.uuid4().hex[:8]}"
    with console.client(console.token_for(user)) as api:
        spec = spec_for(api, "custom/custom", exp="experiments/probe", series="cpu", gpus=1)
        spec["spec"]["framework"]["image"] = "nvcr.io/team/trainer:1.0"
        spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
        files = {"experiments/probe/probe.py": ISOLATION_PROBE,
                 "experiments/probe/train.sh": f"exec {sys.executable} experiments/probe/probe.py "
                                               f"{console.state_dir} {marker}\n"}
        job = admitted(submit(api, spec, data=bundle(files)), "submitted")
        deadline = time.monotonic() + 180
        while (row := api.get("/api/job", params={"id": job}).json())["status"] not in ("succeeded", "failed",
                                                                                          "stopped"):
            assert time.monotonic() < deadline, row
            time.sleep(0.3)
    output = (console.state_dir / "runs" / user / "probe" / job / "logs" / "output.log").read_text(errors="replace")
    assert row["status"] == "succeeded" and row["executor"] == name, output[-3000:]
    report = json.loads(next(line for line in output.splitlines() if line.startswith("PROBE "))[6:])
    for finding in ("state_visible", "walk_up", "databases", "other_runs", "tokens", "env_paths"):
        assert report[finding] == [], (finding, report[finding])
    assert len(report["pids"]) < 10, report["pids"]  # its own PID namespace
    if os.getuid() == 0:
        assert report["uid"] != 0  # a uid of the pool, not the engine's root
    assert list(console.state_dir.rglob(marker)) == []
