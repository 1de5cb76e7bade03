"""The GRPO training loop: step the policy, hand each step's statistics to a callback, save checkpoints on schedule,
resume exactly from a checkpoint's full state, and stop at a step boundary with a checkpoint when asked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from starforge.tinyrl._checkpoint import Checkpoint, TrainerState, save_checkpoint
from starforge.tinyrl._config import TrainConfig
from starforge.tinyrl._grpo import StepStats, grpo_step
from starforge.tinyrl._optimizer import Optimizer, make_optimizer
from starforge.tinyrl._policy import LinearSoftmaxPolicy
from starforge.tinyrl._task import AdditionTask

__all__ = ["TrainResult", "resume_problem", "train"]


@dataclass
class TrainResult:
    """What a run produced: per-step statistics, the checkpoint directories written, where it started and stopped.

    `interrupted_at` is the step at which `should_stop` ended the run early (its checkpoint is the last written).
    """

    history: list[StepStats] = field(default_factory=list)
    checkpoints: list[Path] = field(default_factory=list)
    first_step: int = 1
    interrupted_at: int | None = None


def train(
    config: TrainConfig,
    out_dir: Path,
    *,
    initial_weights: np.ndarray | None = None,
    resume: Checkpoint | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_step: Callable[[int, StepStats], None] | None = None,
    on_checkpoint: Callable[[int, Path], None] | None = None,
) -> TrainResult:
    """Run GRPO steps up to `config.max_num_steps` and return the history; checkpoints go to `out_dir/checkpoints/`.

    `initial_weights` (a checkpoint's) replaces the random start and is also the KL reference policy. `resume` (a
    checkpoint with its trainer state) continues that run at its step + 1 exactly as if it had never stopped: its
    weights, reference policy, optimizer and random generator are restored. `should_stop`, asked after each step,
    ends the run there with a checkpoint of that step (ValueError: `resume` holds no trainer state or does not fit).
    """
    rng = np.random.default_rng(config.seed)
    task = AdditionTask(config.max_operand)
    optimizer = make_optimizer(config.optimizer, config.learning_rate)
    first = 1
    if resume is not None:
        policy, reference = _restore(resume, config, rng, optimizer)
        first = resume.step + 1
    else:
        if initial_weights is None:
            policy = LinearSoftmaxPolicy.initial(
                task.n_features, task.n_actions, rng, scale=config.init_scale, temperature=config.temperature
            )
        else:
            policy = LinearSoftmaxPolicy(initial_weights, config.temperature)
        reference = policy.weights.copy()
    result = TrainResult(first_step=first)
    period = config.save_period if config.checkpointing_enabled else 0

    def checkpoint(step: int, stats: StepStats) -> None:
        scalars, arrays = optimizer.state()
        state = TrainerState(reference, dict(rng.bit_generator.state), scalars, arrays)
        path = save_checkpoint(out_dir, step, policy.weights, _meta(stats, task, policy), state)
        result.checkpoints.append(path)
        if on_checkpoint is not None:
            on_checkpoint(step, path)

    for step in range(first, config.max_num_steps + 1):
        prompts = task.sample_prompts(rng, config.num_prompts_per_step)
        grad, stats = grpo_step(
            policy,
            reference,
            task,
            prompts,
            rng,
            generations=config.num_generations_per_prompt,
            kl_penalty=config.kl_penalty,
            normalize_rewards=config.normalize_rewards,
        )
        optimizer.step(policy.weights, grad)
        result.history.append(stats)
        if on_step is not None:
            on_step(step, stats)
        last = step == config.max_num_steps
        saved = config.checkpointing_enabled and (last or bool(period and step % period == 0))
        if saved:
            checkpoint(step, stats)
        if not last and should_stop is not None and should_stop():
            if not saved:  # asked for explicitly: written even when scheduled checkpoints are off
                checkpoint(step, stats)
            result.interrupted_at = step
            break
    return result


def resume_problem(checkpoint: Checkpoint, config: TrainConfig) -> str:
    """Return why `checkpoint` cannot resume a run of `config` ("" when it can)."""
    state = checkpoint.state
    where = checkpoint.directory
    if state is None:
        return f"{where} holds the weights only (an older checkpoint): it can start a run, not resume one"
    task = AdditionTask(config.max_operand)
    expected = (task.n_features, task.n_actions)
    shapes = [("weights", checkpoint.weights.shape), ("reference weights", state.reference.shape)]
    shapes += [(f"optimizer state {name!r}", value.shape) for name, value in sorted(state.optimizer_arrays.items())]
    for name, shape in shapes:
        if shape != expected:
            return f"{where} holds {name} of shape {shape}, but task.max_operand={config.max_operand} needs {expected}"
    try:
        _load(state, make_optimizer(config.optimizer, config.learning_rate), np.random.default_rng())
    except (TypeError, ValueError, KeyError) as exc:
        return f"{where}: {exc}"
    return ""


def _restore(
    resume: Checkpoint, config: TrainConfig, rng: np.random.Generator, optimizer: Optimizer
) -> tuple[LinearSoftmaxPolicy, np.ndarray]:
    problem = resume_problem(resume, config)
    if problem or resume.state is None:
        raise ValueError(problem)
    _load(resume.state, optimizer, rng)
    return LinearSoftmaxPolicy(resume.weights, config.temperature), resume.state.reference.copy()


def _load(state: TrainerState, optimizer: Optimizer, rng: np.random.Generator) -> None:
    optimizer.load_state(state.optimizer, state.optimizer_arrays)
    try:
        rng.bit_generator.state = state.rng
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"the saved random generator state is unusable: {exc}") from exc


def _meta(stats: StepStats, task: AdditionTask, policy: LinearSoftmaxPolicy) -> dict[str, Any]:
    return {
        "reward": stats.reward,
        "task": {"name": "addition", "max_operand": task.max_operand},
        "policy": {
            "kind": "linear-softmax",
            "n_features": task.n_features,
            "n_actions": task.n_actions,
            "temperature": policy.temperature,
        },
    }
