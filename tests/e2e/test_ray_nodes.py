"""A two-node job on the two-node Ray cluster of `scripts/services.sh up`, through a console and `sf` alone.

The console declares one `cpu` slot per Ray node (`executors.ray.slots_per_node`), so `--profile cpu:2` is a job on
two nodes: the gang launcher reserves a STRICT_SPREAD placement group of two bundles, on two distinct nodes, and
runs one sandboxed rank on each; the ranks rendezvous with torch.distributed (gloo) over the job fabric
(MASTER_ADDR, MASTER_PORT, GLOO_SOCKET_IFNAME), both ranks' lines reach `sf job logs` and rank 0 reports a metric. While one node's CPUs are taken the
job waits with the reason and no rank starts; `sf job stop` ends both ranks and removes the placement group.
Marker `ray` (skipped loudly without the service, failed under CI).
"""

from __future__ import annotations

import os
import re
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from starforge.engines.fabric import FABRIC_IFNAME, address_of
from tests.conftest import require_service
from tests.e2e import two_nodes
from tests.e2e.conftest import Researcher, make_researcher
from tests.e2e.two_nodes import IMAGE, RANK
from tests.integration.conftest import DEFAULT_CONFIG, ConsoleProcess, make_console

pytestmark = pytest.mark.ray

WORKER_RESOURCE = "starforge_worker_node"  # declared by the worker node of scripts/services_ray.sh
TRACKER = "https://wandb.example.com/team/p"



@pytest.fixture(scope="module")
def torch_runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The TRL runtime's folder (torch with gloo), the ranks' interpreter."""
    return two_nodes.torch_runtime(tmp_path_factory)


@pytest.fixture(scope="module")
def ray_console(tmp_path_factory: pytest.TempPathFactory, torch_runtime: Path) -> Iterator[ConsoleProcess]:
    """A console on the Ray cluster, one `cpu` slot per node, a short stop grace; the TRL runtime is a model root."""
    address = require_service("Ray", "RAY_ADDRESS", "run `scripts/services.sh up`")
    config: dict[str, Any] = {**DEFAULT_CONFIG, "stop_grace_seconds": 3, "model_roots": [str(torch_runtime.parent)],
                              "executors": {"ray": {"slots_per_node": {"cpu": 1}}}}
    console = make_console(tmp_path_factory, "sqlite", config=config,
                           extra_args=("--executor", "ray", "--ray-address", address))
    console.start()
    yield console
    console.stop()


def _experiment(me: Researcher, name: str, *args: str, torch: bool = False) -> None:
    """`sf new` a custom experiment whose ranks run `rank.py args…` (with `torch`: on the job's base-model folder,
    the TRL runtime)."""
    assert me.sf("new", name, "--method", "custom/custom").returncode == 0
    folder = next(me.lab.rglob(f"{name}/train.sh")).parent
    (folder / "rank.py").write_text(RANK)
    python = '"$FORGE_MODEL/bin/python"' if torch else sys.executable
    (folder / "train.sh").write_text(f'#!/usr/bin/env bash\nexec {python} "$(dirname "$0")/rank.py" {" ".join(args)}\n')
    me.commit(name)


def _submit(me: Researcher, name: str, torch: Path | None = None) -> str:
    done = me.sf("submit", name, "--profile", "cpu:2", "--image", IMAGE, "--observability-url", TRACKER,
                 *(["--model", str(torch)] if torch else []))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _until(me: Researcher, job: str, what: str, done: Any, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        row: dict[str, Any] = me.api(f"/api/job?id={job}")
        if done(row):
            return row
        assert time.monotonic() < deadline, f"{what}: {row['status']}: {row.get('message')}"
        time.sleep(0.3)


def _log(console: ConsoleProcess, me: Researcher, name: str, job: str) -> str:
    path = next((console.state_dir / "runs").rglob(f"{name}/{job}/logs/output.log"), None)
    return path.read_text(errors="replace") if path is not None else ""


def _client() -> Any:
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(require_service("Ray", "RAY_ADDRESS", "run `scripts/services.sh up`"))


def _placement_groups(run_id: str) -> list[Any]:
    from ray.util.state import list_placement_groups

    address = require_service("Ray", "RAY_ADDRESS", "run `scripts/services.sh up`")
    return [g for g in list_placement_groups(address=address, detail=True, limit=1000)
            if g.name == f"starforge-{run_id}"]


def _processes(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(int(pid))
            except OSError:
                pass
    return found


def test_a_two_node_job_waits_for_both_nodes_then_both_ranks_rendezvous_and_report(
        trainer_slot: None, ray_console: ConsoleProcess, torch_runtime: Path, tmp_path: Path) -> None:
    me = make_researcher(ray_console, tmp_path)
    marker = f"gang-{uuid.uuid4().hex[:8]}"
    _experiment(me, "dist", "reduce", sys.executable, marker, torch=True)
    client = _client()
    blocker = client.submit_job(entrypoint="sleep 600", entrypoint_num_cpus=2,
                                entrypoint_resources={WORKER_RESOURCE: 1})  # every CPU of the worker node
    try:
        deadline = time.monotonic() + 60
        while str(client.get_job_status(blocker).value) != "RUNNING":
            assert time.monotonic() < deadline, client.get_job_info(blocker)
            time.sleep(0.2)
        job = _submit(me, "dist", torch_runtime)
        row = _until(me, job, "the job says why it waits", lambda r: "waiting for 2 nodes" in r.get("message", ""))
        assert row["status"] == "submitted" and "all or nothing" in row["message"], row
        assert "waiting for 2 nodes" in _log(ray_console, me, "dist", job)
        assert "RANK 0" not in _log(ray_console, me, "dist", job) and _processes(marker) == []  # never half
    finally:
        client.stop_job(blocker)
    row = _until(me, job, "the job ends", lambda r: r["status"] in ("succeeded", "failed", "stopped"), timeout=180)
    followed = me.sf("job", "logs", job, timeout=60)
    assert row["status"] == "succeeded", followed.stdout[-3000:]
    ranks = sorted(re.findall(r"RANK (\d)/2 on \S+: all_reduce=3 master=(\S+) ifname=(\S+)", followed.stdout))
    assert [r[0] for r in ranks] == ["0", "1"], followed.stdout[-3000:]  # torch.distributed (gloo) on both
    assert {(r[1], r[2]) for r in ranks} == {(address_of(0), FABRIC_IFNAME)}  # they met over the fabric
    metrics = me.api(f"/api/jobs/{job}/metrics")
    assert "train/loss" in str(metrics), metrics  # rank 0 reported


def test_a_running_two_node_job_holds_two_bundles_on_two_nodes_and_stop_ends_both_ranks(
        ray_console: ConsoleProcess, tmp_path: Path) -> None:
    me = make_researcher(ray_console, tmp_path)
    marker = f"gang-{uuid.uuid4().hex[:8]}"
    _experiment(me, "hold", "hold", marker)
    job = _submit(me, "hold")
    try:
        _hold_then_stop(ray_console, me, job, marker)
    finally:
        me.sf("job", "stop", job)  # never leave a gang holding the cluster's nodes


def _hold_then_stop(ray_console: ConsoleProcess, me: Researcher, job: str, marker: str) -> None:
    _until(me, job, "both ranks hold", lambda r: all(f"RANK {i}/2 holds" in _log(ray_console, me, "hold", job)
                                                      for i in (0, 1)) or r["status"] in ("failed", "succeeded"))
    row = me.api(f"/api/job?id={job}")
    assert row["status"] == "running", _log(ray_console, me, "hold", job)[-3000:]
    (group,) = _placement_groups(job)
    assert group.state == "CREATED", group
    assert len(group.bundles) == 2 and len({b["node_id"] for b in group.bundles}) == 2, group.bundles
    assert len(_processes(marker)) >= 2  # one rank on each node (this machine hosts both)
    assert me.sf("job", "stop", job).returncode == 0
    row = _until(me, job, "the job stops", lambda r: r["status"] in ("stopped", "failed", "succeeded"))
    assert row["status"] == "stopped", row
    deadline = time.monotonic() + 30
    while _processes(marker) or any(g.state != "REMOVED" for g in _placement_groups(job)):
        assert time.monotonic() < deadline, (_processes(marker), _placement_groups(job))
        time.sleep(0.2)
