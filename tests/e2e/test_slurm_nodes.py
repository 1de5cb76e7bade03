"""A two-node job across the two real nodes of the Slurm rig, through a real console and `sf` alone: a custom job with
`--profile cpu:2` (the rig's `cpu` series gives one slot per node) runs one rank per node, each sandboxed in its own
network namespace; the ranks rendezvous with `torch.distributed` (gloo) over the job fabric, both report in
`sf job logs` and rank 0 reports a metric; `scontrol show job` shows two nodes. All or nothing: while one node is
taken by another job, the job waits with Slurm's reason and no rank starts; stopping it once it runs ends both
nodes' processes; a rank failing on one node fails the job although rank 0 succeeded.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from starforge.engines.fabric import FABRIC_IFNAME, address_of
from tests.e2e.conftest import SF, Researcher, make_researcher
from tests.e2e.test_engines import SLURM_SERIES, _slurm_env
from tests.integration.conftest import DEFAULT_CONFIG, RUNTIME_CACHE, ConsoleProcess, make_console

pytestmark = pytest.mark.slurm

NODES = (socket.gethostname().split(".")[0], "sf-node2")  # scripts/services_slurm.sh: this host's slurmd, the second
RUNTIME = "trl-1.10.0"  # the TRL recipes' runtime: its torch runs the ranks' all_reduce
IMAGE = "nvcr.io/team/trainer:1.0"  # a stand-in name: the rig's consoles record images without pulling them
# what each rank runs: `hold MARKER` says it started and waits to be stopped; `reduce PYTHON` joins a gloo
# all_reduce (rank 0 then reports through PYTHON, which has StarForge); `fail`: rank 1 fails, rank 0 succeeds
RANK = '''
import datetime, os, subprocess, sys, threading
rank, world, node = int(os.environ["NODE_RANK"]), int(os.environ["NNODES"]), os.environ.get("SLURMD_NODENAME", "?")
if sys.argv[1] == "fail":
    print(f"RANK {rank}/{world} ends on {node}", flush=True)
    sys.exit(3 if rank == 1 else 0)
if sys.argv[1] == "hold":
    print(f"RANK {rank}/{world} holds on {node}", flush=True)
    threading.Event().wait()
import torch
import torch.distributed as dist
dist.init_process_group("gloo", init_method=f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
                        rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
print(f"RANK {rank}/{world} on {node}: all_reduce={total.item():g} master={os.environ['MASTER_ADDR']} "
      f"ifname={os.environ['GLOO_SOCKET_IFNAME']}", flush=True)
dist.destroy_process_group()
if rank == 0:  # the report SDK is StarForge's: the interpreter that has it (the TRL runtime's torch has not)
    code = f"from starforge.runner import report; report.log({{'train/loss': {total.item()}}}, step=1); report.finish()"
    subprocess.run([sys.argv[2], "-c", code], check=True)
'''


@pytest.fixture(scope="module")
def torch_runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return the folder of the TRL recipes' CPU runtime (torch with gloo), built once per machine and shared with
    the TRL suites; the job sees it read-only as its base-model folder (a folder of the console's model_roots)."""
    config = tmp_path_factory.mktemp("runtime") / "console.yaml"
    config.write_text(yaml.safe_dump({**DEFAULT_CONFIG, "runtimes": {"cache_dir": str(RUNTIME_CACHE)}}))
    built = subprocess.run([*SF, "console", "runtime", "build", RUNTIME, "--kind", "cpu", "--config", str(config),
                            "--json"], capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert built.returncode == 0, built.stderr[-4000:]
    return Path(json.loads(built.stdout)["interpreter"]).parent.parent


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory, torch_runtime: Path) -> Iterator[ConsoleProcess]:
    """A Slurm console whose `cpu` profile and series give one slot per node: `cpu:2` is two nodes of one."""
    env = _slurm_env()
    config: dict[str, Any] = {**DEFAULT_CONFIG, "model_roots": [str(torch_runtime.parent)]}
    config["profiles"] = [{"name": "cpu", "series": "cpu", "num_nodes": 1, "gpus_per_node": 1},
                          {"name": "h200", "series": "h200", "num_nodes": 1, "gpus_per_node": 8}]
    config["executors"] = {"slurm": {"series": {**SLURM_SERIES, "cpu": {"gres": "none", "gpus_per_node": 1}}}}
    proc = make_console(tmp_path_factory, "sqlite", config=config, extra_args=("--executor", "slurm"))
    proc.env.update(env)
    proc.start()
    yield proc
    proc.stop()


def _slurm(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, env={**os.environ, **_slurm_env()},
                          check=True).stdout


def _submit(me: Researcher, name: str, *args: str, torch: Path | None = None) -> str:
    """Submit a custom job on two nodes whose ranks run `python rank.py args…` (with `torch`: that runtime's
    interpreter, the job's base-model folder); return its id."""
    assert me.sf("new", name, "--method", "custom/custom").returncode == 0
    folder = me.lab / "experiments" / name
    (folder / "rank.py").write_text(RANK)
    python = '"$FORGE_MODEL/bin/python"' if torch else sys.executable
    (folder / "train.sh").write_text(f'exec {python} "$(dirname "$0")/rank.py" {" ".join(args)}\n')
    me.commit(name)
    submitted = me.sf("submit", name, "--profile", "cpu:2", "--image", IMAGE, *(["--model", str(torch)] if torch else []),
                      "--observability-url", "https://wandb.example.com/team/p")
    assert submitted.returncode == 0, submitted.stderr
    return submitted.stdout.strip()


def _until(me: Researcher, job: str, done: Any, what: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    row = me.json("job", "status", job)
    while not done(row):
        assert time.monotonic() < deadline, f"{what}: {row}"
        time.sleep(0.3)
        row = me.json("job", "status", job)
    return row


def _processes(marker: str) -> list[str]:
    """Return the command lines of this machine's processes (both nodes' are here) that name `marker`."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in line:
                found.append(line)
    return found


def test_two_ranks_on_two_nodes_rendezvous_over_the_fabric_and_report(console: ConsoleProcess, torch_runtime: Path,
                                                                      tmp_path: Path) -> None:
    me = make_researcher(console, tmp_path)
    job = _submit(me, "dist", "reduce", sys.executable, torch=torch_runtime)
    followed = me.sf("job", "logs", job, timeout=300)
    assert followed.returncode == 0, followed.stderr + followed.stdout
    ranks = sorted(re.findall(r"RANK (\d)/2 on (\S+): all_reduce=3 master=(\S+) ifname=(\S+)", followed.stdout))
    assert [r[0] for r in ranks] == ["0", "1"], followed.stdout[-3000:]
    assert {r[1] for r in ranks} == set(NODES)  # one rank on each node
    assert {(r[2], r[3]) for r in ranks} == {(address_of(0), FABRIC_IFNAME)}
    row = me.json("job", "status", job)
    assert row["status"] == "succeeded", row
    shown = _slurm("scontrol", "-o", "show", "job", row["engine_ref"])
    assert "NumNodes=2 " in shown and "JobState=COMPLETED" in shown, shown
    assert "train/loss" in str(me.api(f"/api/jobs/{job}/metrics")), "rank 0 reported no metric"


def test_a_two_node_job_waits_for_both_nodes_then_stops_on_both(console: ConsoleProcess, tmp_path: Path) -> None:
    me = make_researcher(console, tmp_path)
    blocker = _slurm("sbatch", "--parsable", f"--nodelist={NODES[1]}", "--exclusive", "--output=/dev/null",
                     "--wrap", "exec sleep 600").strip()
    marker = f"hold-{uuid.uuid4().hex[:8]}"
    try:
        state = _slurm("squeue", "-h", "-j", blocker, "-o", "%T")
        deadline = time.monotonic() + 60
        while "RUNNING" not in state:  # the other job holds the second node
            assert time.monotonic() < deadline, state
            time.sleep(0.2)
            state = _slurm("squeue", "-h", "-j", blocker, "-o", "%T")
        job = _submit(me, "held", "hold", marker)
        row = _until(me, job, lambda r: re.search(r"queued by slurm as \d+: \S", r.get("message", "")),
                     "the job should wait with Slurm's reason")
        assert row["status"] == "submitted", row
        shown = _slurm("scontrol", "-o", "show", "job", row["engine_ref"])
        assert "JobState=PENDING" in shown and "NumNodes=2" in shown, shown
        assert _processes(marker) == []  # never half: no rank started on the free node
    finally:
        _slurm("scancel", blocker)
    row = _until(me, job, lambda r: r["status"] == "running", "the job should start once both nodes are free")
    log = ""
    deadline = time.monotonic() + 120
    while len(re.findall(r"RANK \d/2 holds on", log)) < 2:
        assert time.monotonic() < deadline, log[-3000:]
        time.sleep(0.3)
        log = me.sf("job", "logs", job, "--no-follow").stdout
    assert set(re.findall(r"RANK \d/2 holds on (\S+)", log)) == set(NODES)
    run = _processes(marker)
    assert len([p for p in run if "rank.py" in p]) >= 2, run  # a rank's process on each node
    assert me.sf("job", "stop", job).returncode == 0
    row = _until(me, job, lambda r: r["status"] == "stopped", "the job should stop")
    assert _slurm("squeue", "-h", "-j", row["engine_ref"]).strip() == ""
    assert _processes(marker) == [], _processes(marker)  # nothing of the job remains on either node


def test_a_rank_failing_on_the_other_node_fails_the_job(console: ConsoleProcess, tmp_path: Path) -> None:
    me = make_researcher(console, tmp_path)
    job = _submit(me, "half", "fail")
    followed = me.sf("job", "logs", job, timeout=300)
    assert followed.returncode == 1 and len(re.findall(r"RANK \d/2 ends on", followed.stdout)) == 2, followed.stdout
    row = me.json("job", "status", job)
    assert row["status"] == "failed", row  # rank 0's exit record says 0; Slurm says rank 1 exited with 3
