"""tinyrl end to end in subprocesses: GRPO raises the reward, checkpoints restart training, export writes hf_export."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
TEMPLATE_CONFIG = REPO / "src" / "starforge" / "recipes" / "builtin" / "tinyrl" / "grpo" / "template" / "config.yaml"
STEP_LINE = re.compile(r"^step (\d+)/(\d+) reward=([0-9.]+) loss=(-?[0-9.]+) kl=(-?[0-9.]+) entropy=([0-9.]+)$")


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str

    @property
    def rewards(self) -> list[float]:
        return [float(m.group(3)) for line in self.stdout.splitlines() if (m := STEP_LINE.match(line))]


def _env(out_dir: Path | None, init_from: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STARFORGE_", "FORGE_"))}
    env["STARFORGE_ENABLED"] = "0"
    if out_dir is not None:
        env["FORGE_OUT_DIR"] = str(out_dir)
    if init_from is not None:
        env["FORGE_INIT_FROM"] = str(init_from)
    return env


def _run(module: str, args: list[str], env: dict[str, str], cwd: Path) -> Run:
    done = subprocess.run(
        [sys.executable, "-m", module, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )
    return Run(done.returncode, done.stdout, done.stderr)


def _train(cwd: Path, env: dict[str, str], *overrides: str) -> Run:
    return _run("starforge.tinyrl.grpo", ["--config", str(TEMPLATE_CONFIG), *overrides], env, cwd)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Path]:
    out = tmp_path_factory.mktemp("train") / "out"
    run = _train(out.parent, _env(out), "grpo.max_num_steps=40", "checkpointing.save_period=15")
    return run, out


def test_training_exits_zero_and_prints_one_line_per_step(trained: tuple[Run, Path]) -> None:
    run, _ = trained
    assert run.returncode == 0, run.stderr
    assert len(run.rewards) == 40
    assert "step 40/40 reward=" in run.stdout


def test_reward_rises(trained: tuple[Run, Path]) -> None:
    rewards = trained[0].rewards
    first, last = sum(rewards[:10]) / 10, sum(rewards[-10:]) / 10
    assert first < 0.35
    assert last > first + 0.3, (first, last)


def test_checkpoints_on_schedule_and_at_the_end(trained: tuple[Run, Path]) -> None:
    _, out = trained
    names = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert names == ["step_15", "step_30", "step_40"]
    meta = json.loads((out / "checkpoints" / "step_40" / "meta.json").read_text())
    assert meta["step"] == 40
    assert meta["reward"] == pytest.approx(trained[0].rewards[-1], abs=0.006)
    assert (out / "checkpoints" / "step_40" / "model.npz").is_file()


def test_metrics_reach_the_report_sdk(trained: tuple[Run, Path]) -> None:
    _, out = trained
    points = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    keys = {p["key"] for p in points}
    assert {"train/reward", "train/loss", "train/kl_penalty", "train/entropy"} <= keys
    assert sorted(p["step"] for p in points if p["key"] == "train/reward") == list(range(1, 41))


def test_init_from_a_checkpoint_starts_high(trained: tuple[Run, Path], tmp_path: Path) -> None:
    _, out = trained
    run = _train(tmp_path, _env(tmp_path / "out", out / "checkpoints" / "step_40"), "grpo.max_num_steps=3")
    assert run.returncode == 0, run.stderr
    assert "initialising from" in run.stdout
    assert run.rewards[0] > 0.6


def test_init_from_a_run_directory_uses_its_latest_checkpoint(trained: tuple[Run, Path], tmp_path: Path) -> None:
    _, out = trained
    run = _train(tmp_path, _env(tmp_path / "out", out), "grpo.max_num_steps=1")
    assert run.returncode == 0, run.stderr
    assert "step_40 (step 40," in run.stdout


def test_export_writes_hf_export(trained: tuple[Run, Path], tmp_path: Path) -> None:
    _, out = trained
    run = _run("starforge.tinyrl.export", [], _env(tmp_path / "out", out / "checkpoints" / "step_40"), tmp_path)
    assert run.returncode == 0, run.stderr
    export = tmp_path / "out" / "hf_export"
    assert sorted(p.name for p in export.iterdir()) == ["README.md", "config.json", "model.npz"]
    config = json.loads((export / "config.json").read_text())
    assert config["source"]["step"] == 40
    assert config["eval"]["greedy_accuracy"] > 0.5
    assert str(export / "config.json") in run.stdout


def test_export_takes_checkpoint_flag(trained: tuple[Run, Path], tmp_path: Path) -> None:
    _, out = trained
    args = ["--checkpoint", str(out / "checkpoints" / "step_15")]
    run = _run("starforge.tinyrl.export", args, _env(tmp_path / "out"), tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "out" / "hf_export" / "config.json").read_text())["source"]["step"] == 15


def test_export_without_checkpoint_fails_cleanly(tmp_path: Path) -> None:
    run = _run("starforge.tinyrl.export", [], _env(tmp_path / "out"), tmp_path)
    assert run.returncode == 2
    assert "FORGE_INIT_FROM" in run.stderr
    assert "Traceback" not in run.stderr


def test_out_dir_defaults_to_out(tmp_path: Path) -> None:
    run = _train(tmp_path, _env(None), "grpo.max_num_steps=2")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out" / "checkpoints" / "step_2" / "model.npz").is_file()


def test_bad_overrides_exit_nonzero_listing_every_problem(tmp_path: Path) -> None:
    cases = {
        "grpo.max_num_steps=0": "grpo.max_num_steps: must be at least 1",
        "grpo.num_prompts_per_stp=5": "did you mean grpo.num_prompts_per_step?",
        "policy.optimizer.kwargs.lr=fast": "policy.optimizer.kwargs.lr: must be a number",
        "grpo.num_generations_per_prompt=1": "grpo.num_generations_per_prompt: must be at least 2",
        "max_num_steps": "an override must read dotted.path=value",
    }
    run = _train(tmp_path, _env(tmp_path / "out"), *cases)
    assert run.returncode == 2
    for expected in cases.values():
        assert expected in run.stderr
    assert "5 problem(s)" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()


def test_missing_config_and_bad_init_from_fail_cleanly(tmp_path: Path) -> None:
    missing = _run("starforge.tinyrl.grpo", ["--config", str(tmp_path / "nope.yaml")], _env(tmp_path / "o"), tmp_path)
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr
    bad_init = _train(tmp_path, _env(tmp_path / "o", tmp_path / "no-such-checkpoint"))
    assert bad_init.returncode == 2
    assert "FORGE_INIT_FROM" in bad_init.stderr
    assert "Traceback" not in missing.stderr + bad_init.stderr
