"""tinyrl's "checkpoint, then stop" and exact resume: a run stopped at step k and resumed ends with the very weights of
a run that never stopped (weights, reference policy, optimizer and random generator all restored)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from starforge.tinyrl import TrainConfig, load_checkpoint, load_config, save_checkpoint
from starforge.tinyrl._trainer import resume_problem, train
from starforge.tinyrl.grpo import main

REPO = Path(__file__).resolve().parents[3]
TEMPLATE_CONFIG = REPO / "src" / "starforge" / "recipes" / "builtin" / "tinyrl" / "grpo" / "template" / "config.yaml"
SMALL = ["grpo.max_num_steps=12", "grpo.num_prompts_per_step=16", "grpo.num_generations_per_prompt=4",
         "checkpointing.save_period=5"]


def _config(*overrides: str) -> TrainConfig:
    config, problems = load_config(TEMPLATE_CONFIG, [*SMALL, *overrides])
    assert config is not None, problems
    return config


def _stop_after(step: int) -> object:
    done = [0]

    def should_stop() -> bool:
        done[0] += 1
        return done[0] == step

    return should_stop


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("stop_at", [5, 7])  # on the checkpoint schedule, and between two scheduled checkpoints
def test_a_run_stopped_and_resumed_ends_exactly_like_one_that_never_stopped(
    tmp_path: Path, optimizer: str, stop_at: int
) -> None:
    config = _config(f"policy.optimizer.name={optimizer}")
    whole = train(config, tmp_path / "whole")

    out = tmp_path / "stopped"
    first = train(config, out, should_stop=_stop_after(stop_at))  # type: ignore[arg-type]
    assert first.interrupted_at == stop_at and len(first.history) == stop_at
    assert first.checkpoints[-1] == out / "checkpoints" / f"step_{stop_at}"
    second = train(config, out, resume=load_checkpoint(first.checkpoints[-1]))

    assert second.first_step == stop_at + 1 and second.interrupted_at is None
    assert first.history + second.history == whole.history  # every step's statistics, to the last bit
    final = load_checkpoint(out / "checkpoints" / "step_12")
    np.testing.assert_array_equal(final.weights, load_checkpoint(tmp_path / "whole" / "checkpoints").weights)
    assert final.state is not None and final.meta["trainer"]["optimizer"]["name"] == optimizer


def test_a_stop_request_writes_a_checkpoint_even_when_scheduled_ones_are_off(tmp_path: Path) -> None:
    config = _config("checkpointing.enabled=false")
    result = train(config, tmp_path, should_stop=_stop_after(3))  # type: ignore[arg-type]
    assert result.interrupted_at == 3
    assert [p.name for p in result.checkpoints] == ["step_3"]
    assert train(config, tmp_path / "never").checkpoints == []


def test_a_stop_request_ends_the_run_after_the_current_step_but_the_last_step_ends_it_normally(
    tmp_path: Path
) -> None:
    result = train(_config(), tmp_path, should_stop=lambda: True)
    assert result.interrupted_at == 1  # asked at once: stops after the first step
    last = train(_config("grpo.max_num_steps=1"), tmp_path / "one", should_stop=lambda: True)
    assert last.interrupted_at is None and len(last.history) == 1


def test_the_checkpoint_holds_the_full_trainer_state(tmp_path: Path) -> None:
    result = train(_config(), tmp_path, should_stop=_stop_after(7))  # type: ignore[arg-type]
    checkpoint = load_checkpoint(result.checkpoints[-1])
    meta = json.loads((checkpoint.directory / "meta.json").read_text())
    assert meta["format"] == "tinyrl/checkpoint/v2" and meta["step"] == 7
    assert meta["trainer"]["optimizer"] == {"name": "adam", "t": 7}
    assert meta["trainer"]["rng"]["bit_generator"] == "PCG64"
    assert checkpoint.state is not None
    assert set(checkpoint.state.optimizer_arrays) == {"m", "v"}
    assert checkpoint.state.reference.shape == checkpoint.weights.shape
    assert not np.array_equal(checkpoint.state.reference, checkpoint.weights)  # the start, not the current policy


def test_an_older_checkpoint_starts_a_run_but_cannot_resume_one(tmp_path: Path) -> None:
    config = _config()
    weights = train(config, tmp_path / "run").checkpoints[-1]
    old = save_checkpoint(tmp_path / "old", 4, load_checkpoint(weights).weights, {"reward": 0.5})  # v1: no state
    checkpoint = load_checkpoint(old)
    assert checkpoint.state is None and checkpoint.step == 4
    assert "weights only" in resume_problem(checkpoint, config)
    with pytest.raises(ValueError, match="weights only"):
        train(config, tmp_path / "x", resume=checkpoint)
    assert len(train(config, tmp_path / "y", initial_weights=checkpoint.weights).history) == 12


def test_a_checkpoint_of_another_optimizer_or_task_cannot_resume(tmp_path: Path) -> None:
    checkpoint = load_checkpoint(train(_config(), tmp_path, should_stop=_stop_after(2)).checkpoints[-1])  # type: ignore[arg-type]
    assert "'adam'" in resume_problem(checkpoint, _config("policy.optimizer.name=sgd"))
    assert "task.max_operand=4" in resume_problem(checkpoint, _config("task.max_operand=4"))
    assert resume_problem(checkpoint, _config()) == ""


def _env(out: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STARFORGE_", "FORGE_"))}
    return {**env, "STARFORGE_ENABLED": "0", "FORGE_OUT_DIR": str(out), **extra}


def test_the_entry_point_stops_on_the_preempt_file_and_a_later_attempt_resumes_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--config", str(TEMPLATE_CONFIG), *SMALL]
    assert main(args, _env(tmp_path / "whole")) == 0
    capsys.readouterr()

    preempt = tmp_path / "preempt"
    preempt.write_text("preempted\n")
    out = tmp_path / "out"
    assert main(args, _env(out, FORGE_PREEMPT_FILE=str(preempt))) == 0
    first = capsys.readouterr().out
    assert "checkpoint at step 1, stopping: the console asked (a later attempt resumes at step 2)" in first
    assert [p.name for p in (out / "checkpoints").iterdir()] == ["step_1"]

    preempt.unlink()  # forge-launch removes it before the next attempt starts
    elsewhere = tmp_path / "whole" / "checkpoints" / "step_5"  # FORGE_INIT_FROM: the run's start, not its resume
    env = _env(out, FORGE_RESUME_FROM=str(out / "checkpoints" / "step_1"), FORGE_RESUME_STEP="1", FORGE_ATTEMPT="2",
               FORGE_INIT_FROM=str(elsewhere), FORGE_PREEMPT_FILE=str(preempt))
    assert main(args, env) == 0
    second = capsys.readouterr().out
    assert f"resuming from {out / 'checkpoints' / 'step_1'} (attempt 2): continuing at step 2 of 12" in second
    assert "step 2/12 " in second and "step 1/12 " not in second and "initialising from" not in second
    np.testing.assert_array_equal(load_checkpoint(out / "checkpoints" / "step_12").weights,
                                  load_checkpoint(tmp_path / "whole" / "checkpoints" / "step_12").weights)
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert sorted(set(steps)) == list(range(1, 13))  # the first attempt's step 1, then steps 2..12


def test_the_entry_point_refuses_to_resume_from_an_unusable_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--config", str(TEMPLATE_CONFIG), *SMALL]
    assert main(args, _env(tmp_path / "o", FORGE_RESUME_FROM=str(tmp_path / "missing"))) == 2
    assert "FORGE_RESUME_FROM: " in capsys.readouterr().err
    old = save_checkpoint(tmp_path, 3, np.zeros((101, 19)), {"reward": 0.0})
    assert main(args, _env(tmp_path / "o", FORGE_RESUME_FROM=str(old))) == 2
    assert "it can start a run, not resume one" in capsys.readouterr().err


def test_sigusr1_stops_a_running_training_at_the_end_of_its_step_with_a_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = [sys.executable, "-m", "starforge.tinyrl.grpo", "--config", str(TEMPLATE_CONFIG), *SMALL,
               "grpo.max_num_steps=1000000"]
    proc = subprocess.Popen(command, env=_env(out), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if line.startswith("step 1/"):  # the handler is installed before the first step
                break
        proc.send_signal(signal.SIGUSR1)
        rest = proc.stdout.read()
        assert proc.wait(30) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.kill()
        proc.wait(10)
    stopped = [line for line in rest.splitlines() if line.startswith("checkpoint at step ")]
    assert len(stopped) == 1
    step = int(stopped[0].split()[3].rstrip(","))
    assert 1 <= step < 1000000
    assert load_checkpoint(out / "checkpoints" / f"step_{step}").state is not None
