"""A two-node job across the two real nodes of the Slurm rig, through a real console and `sf` alone: a custom job with
`--profile cpu:2` (the rig's `cpu` series gives one slot per node) runs one rank per node, each sandboxed in its own
network namespace; the ranks rendezvous with `torch.distributed` (gloo) over the job fabric, both report in
`sf job logs` and rank 0 reports a metric; `scontrol show job` shows two nodes. All or nothing: while one node is
taken by another job, the job waits with Slurm's reason and no rank starts; stopping it once it runs ends both
nodes' processes; a rank failing on one node fails the job although rank 0 succeeded. The TRL SFT template trains
on two nodes (one torch world started by torchrun on each node) and registers its checkpoint once.
"""

from __future__ import annotations

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
from tests.e2e import two_nodes
from tests.e2e.conftest import SF, Researcher, make_researcher
from tests.e2e.test_engines import SLURM_SERIES, _slurm_env
from tests.e2e.two_nodes import IMAGE, RANK, RUNTIME
from tests.integration.conftest import DEFAULT_CONFIG, RUNTIME_CACHE, ConsoleProcess, make_console

pytestmark = pytest.mark.slurm

NODES = (socket.gethostname().split(".")[0], "sf-node2")  # scripts/services_slurm.sh: this host's slurmd, the second
@pytest.fixture(scope="module")
def torch_runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The TRL runtime's folder (torch with gloo), the ranks' interpreter."""
    return two_nodes.torch_runtime(tmp_path_factory)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory, torch_runtime: Path) -> Path:
    """Return a folder holding `models/tiny-llama` (random weights, a tokenizer trained on the fly) and `data/`,
    made by the module StarForge ships, on the TRL runtime's interpreter (`sf console runtime run`)."""
    base = tmp_path_factory.mktemp("tiny")
    (base / "models").mkdir()
    config = base / "console.yaml"
    config.write_text(yaml.safe_dump({**DEFAULT_CONFIG, "runtimes": {"cache_dir": str(RUNTIME_CACHE)}}))
    made = subprocess.run([*SF, "console", "runtime", "run", RUNTIME, "--kind", "cpu", "--config", str(config), "--",
                           "-m", "starforge.trainers.tiny_model", "models/tiny-llama", "--data", "data"], cwd=base,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert made.returncode == 0, made.stderr[-4000:]
    return base


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory, torch_runtime: Path, tiny: Path) -> Iterator[ConsoleProcess]:
    """A Slurm console whose `cpu` profile and series give one slot per node: `cpu:2` is two nodes of one."""
    env = _slurm_env()
    config: dict[str, Any] = {**DEFAULT_CONFIG, "model_roots": [str(torch_runtime.parent), str(tiny / "models")],
                              "runtimes": {"cache_dir": str(RUNTIME_CACHE), "hub_cache": str(tiny / "hub")}}
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


def test_two_ranks_on_two_nodes_rendezvous_over_the_fabric_and_report(
        trainer_slot: None, console: ConsoleProcess, torch_runtime: Path, tmp_path: Path) -> None:
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
        state = _slurm("squeue", "-h", "-j", blocker, "-o", "%T %r")
        # the other job holds the second node, once the jobs other test workers run there have left it
        deadline = time.monotonic() + 300
        while not state.startswith("RUNNING"):
            assert time.monotonic() < deadline, f"the blocker never got {NODES[1]}: {state}"
            time.sleep(0.2)
            state = _slurm("squeue", "-h", "-j", blocker, "-o", "%T %r")
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


def test_trl_sft_trains_on_two_nodes_and_registers_its_checkpoint_once(
        trainer_slot: None, console: ConsoleProcess, tiny: Path, tmp_path: Path) -> None:
    """The TRL SFT template on `cpu:2`: each node's forge-launch starts its share of one torch world through
    torchrun (the recipe's launcher), the ranks train together over the fabric, and rank 0 alone reports."""
    me = make_researcher(console, tmp_path)
    train = me.json("dataset", "push", str(tiny / "data" / "sft.jsonl"), "sft-train@1")["ref"]
    val = me.json("dataset", "push", str(tiny / "data" / "sft-val.jsonl"), "sft-val@1")["ref"]
    assert me.sf("new", "wide-sft", "--method", "trl/sft").returncode == 0
    config_file = me.lab / "experiments" / "wide-sft" / "config.yaml"
    config = yaml.safe_load(config_file.read_text())
    config.update(logging_steps=1, eval_strategy="no")  # a loss point per step; no evaluation pass
    config_file.write_text(yaml.safe_dump(config))
    me.commit("wide-sft")
    submitted = me.sf("submit", "wide-sft", "--profile", "cpu:2", "--model", str(tiny / "models" / "tiny-llama"),
                      "--train-dataset", train, "--val-dataset", val, "--set", "bf16=false", "--set", "max_steps=6")
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()
    followed = me.sf("job", "logs", job, timeout=600)
    row = me.json("job", "status", job)
    assert row["status"] == "succeeded", (row, followed.stdout[-6000:])
    log = followed.stdout + followed.stderr
    assert "torch.distributed.run --nnodes=2 --node-rank=0" in log, log[-4000:]
    assert "[forge-launch] (node 1) starting" in log and "torch.distributed.run --nnodes=2 --node-rank=1" in log
    shown = _slurm("scontrol", "-o", "show", "job", row["engine_ref"])
    assert "NumNodes=2 " in shown and "JobState=COMPLETED" in shown, shown
    loss = me.json("job", "metrics", job)["metrics"].get("train/loss")
    assert loss is not None and len(loss) >= 2, loss
    listed = me.json("job", "artifacts", job)["artifacts"]
    checkpoints = [a["path"] for a in listed if a["kind"] == "checkpoint"]
    assert checkpoints and len(checkpoints) == len(set(checkpoints)), listed  # registered once, by rank 0
    assert any(a["kind"] == "model" for a in listed), listed
