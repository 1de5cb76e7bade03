"""A real TRL SFT run on the tiny model (CPU), stopped by SIGUSR1 at step 2 and resumed by a second attempt.

The TRL runtime is the one the e2e suite builds (`sf console runtime build trl-1.10.0 --kind cpu`, cached outside the
clone, about 2 s when built). A probe module, run through `starforge.trainers.trl_entry` like a recipe's module,
sends its own process SIGUSR1 as step 2 begins (standing in for forge-launch) and records the optimizer's state
when the training's first step begins; it then runs `trl.scripts.sft` as the trl/sft recipe does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.conftest import RUNTIME_CACHE

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
SF = [sys.executable, "-c", "from starforge.cli.main import run; run()"]
PROBE = r'''
import json, os, runpy, signal
from pathlib import Path
from transformers import Trainer, TrainerCallback


class Probe(TrainerCallback):
    first = True

    def on_step_begin(self, args, state, control, optimizer=None, **kwargs):
        if self.first:
            self.first = False
            steps = sorted({int(s["step"]) for s in optimizer.state.values() if "step" in s})
            Path(os.environ["PROBE_RECORD"]).write_text(json.dumps({"global_step": state.global_step,
                                                                     "adam_steps": steps}))
        if state.global_step + 1 == int(os.environ.get("PROBE_SIGNAL_AT", "0")):
            os.kill(os.getpid(), signal.SIGUSR1)


original = Trainer.__init__


def init(self, *args, **kwargs):
    original(self, *args, **kwargs)
    self.add_callback(Probe())


Trainer.__init__ = init
runpy.run_module("trl.scripts.sft", run_name="__main__", alter_sys=True)
'''
CONFIG = {
    "model_name_or_path": "model", "dataset_name": "data", "output_dir": "out/checkpoints", "max_steps": 5,
    "per_device_train_batch_size": 4, "learning_rate": 1.0e-3, "lr_scheduler_type": "linear", "save_steps": 3,
    "logging_steps": 1, "report_to": "none", "bf16": False, "seed": 42, "max_length": 64, "disable_tqdm": True,
}


def _interpreter(tmp: Path) -> str:
    config = tmp / "console.yaml"
    config.write_text(yaml.safe_dump({"runtimes": {"cache_dir": RUNTIME_CACHE, "hub_cache": str(tmp / "hub")}}))
    built = subprocess.run([*SF, "console", "runtime", "build", "trl-1.10.0", "--kind", "cpu", "--config",
                            str(config), "--json"], capture_output=True, text=True, timeout=1800,
                           stdin=subprocess.DEVNULL)
    assert built.returncode == 0, built.stderr[-4000:]
    return str(json.loads(built.stdout)["interpreter"])


def _run(python: str, tmp: Path, args: list[str], **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STARFORGE_", "FORGE_"))}
    env.update({"PYTHONPATH": str(REPO / "src"), "STARFORGE_ENABLED": "0", "FORGE_OUT_DIR": str(tmp / "out"),
                "FORGE_PREEMPT_FILE": str(tmp / "preempt"), "FORGE_EXP_DIR": str(tmp / "exp"),
                "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp / "hub"), "PROBE_RECORD": str(tmp / "probe.json"),
                **extra})
    done = subprocess.run([python, *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    return done


def _record(tmp: Path) -> dict[str, Any]:
    return dict(json.loads((tmp / "probe.json").read_text()))


def _state(checkpoint: Path) -> dict[str, Any]:
    return dict(json.loads((checkpoint / "trainer_state.json").read_text()))


def test_a_tiny_sft_run_stopped_by_sigusr1_resumes_from_its_checkpoint_with_its_optimizer(
        trainer_slot: None, tmp_path: Path) -> None:
    python = _interpreter(tmp_path)
    _run(python, tmp_path, ["-m", "starforge.trainers.tiny_model", "model", "--data", "raw"])
    (tmp_path / "data" / "train").mkdir(parents=True)
    (tmp_path / "raw" / "sft.jsonl").rename(tmp_path / "data" / "train" / "sft.jsonl")
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "sft_probe.py").write_text(PROBE)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    command = ["-m", "starforge.trainers.trl_entry", "sft_probe", "--config", "config.yaml"]
    checkpoints = tmp_path / "out" / "checkpoints"

    first = _run(python, tmp_path, command, PROBE_SIGNAL_AT="2")
    assert "[starforge] checkpoint at step 2, stopping: the console asked" in first.stdout
    assert "the final model is not saved" in first.stdout
    assert sorted(p.name for p in checkpoints.glob("checkpoint-*")) == ["checkpoint-2"]  # not on the schedule (3)
    assert _state(checkpoints / "checkpoint-2")["global_step"] == 2
    assert (checkpoints / "checkpoint-2" / "optimizer.pt").is_file()
    assert not (tmp_path / "out" / "model").exists()
    assert _record(tmp_path) == {"global_step": 0, "adam_steps": []}

    second = _run(python, tmp_path, command, FORGE_RESUME_FROM=str(checkpoints / "checkpoint-2"),
                  FORGE_RESUME_STEP="2", FORGE_ATTEMPT="2")
    assert "[starforge] resuming from checkpoint-2 (attempt 2)" in second.stdout
    # the first step of the second attempt begins with Adam's moments of the first two steps: optimizer.pt loaded
    assert _record(tmp_path) == {"global_step": 2, "adam_steps": [2]}
    final = _state(checkpoints / "checkpoint-5")
    assert final["global_step"] == 5
    assert [entry["step"] for entry in final["log_history"] if "loss" in entry] == [1, 2, 3, 4, 5]
    assert (tmp_path / "out" / "model" / "model.safetensors").is_file()  # a finished run saves its model
    points = [json.loads(line) for line in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    assert [p["step"] for p in points if p["key"] == "train/loss"] == [1, 2, 3, 4, 5]  # logging goes on at step 3
    rates = {p["step"]: p["value"] for p in points if p["key"] == "train/learning_rate"}
    assert rates[3] == pytest.approx(1.0e-3 * (1 - 2 / 5))  # the linear schedule goes on where it was
