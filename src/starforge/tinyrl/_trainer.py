"""The GRPO training loop: step the policy, hand each step's statistics to a callback, save checkpoints on schedule."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from starforge.tinyrl._checkpoint import save_checkpoint
from starforge.tinyrl._config import TrainConfig
from starforge.tinyrl._grpo import StepStats, grpo_step
from starforge.tinyrl._optimizer import make_optimizer
from starforge.tinyrl._policy import LinearSoftmaxPolicy
from starforge.tinyrl._task import AdditionTask

__all__ = ["TrainResult", "train"]


@dataclass
class TrainResult:
    """What a finished run produced: per-step statistics and the checkpoint directories written."""

    history: list[StepStats] = field(default_factory=list)
    checkpoints: list[Path] = field(default_factory=list)


def train(
    config: TrainConfig,
    out_dir: Path,
    *,
    initial_weights: np.ndarray | None = None,
    on_step: Callable[[int, StepStats], None] | None = None,
    on_checkpoint: Callable[[int, Path], None] | None = None,
) -> TrainResult:
    """Run `config.max_num_steps` GRPO steps and return the history; checkpoints go to `out_dir/checkpoints/`.

    `initial_weights` (a checkpoint's) replaces the random start and is also the KL reference policy.
    """
    rng = np.random.default_rng(config.seed)
    task = AdditionTask(config.max_operand)
    if initial_weights is None:
        policy = LinearSoftmaxPolicy.initial(
            task.n_features, task.n_actions, rng, scale=config.init_scale, temperature=config.temperature
        )
    else:
        policy = LinearSoftmaxPolicy(initial_weights, config.temperature)
    reference = policy.weights.copy()
    optimizer = make_optimizer(config.optimizer, config.learning_rate)
    result = TrainResult()
    period = config.save_period if config.checkpointing_enabled else 0

    for step in range(1, config.max_num_steps + 1):
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
        if config.checkpointing_enabled and (last or (period and step % period == 0)):
            meta = {
                "reward": stats.reward,
                "task": {"name": "addition", "max_operand": task.max_operand},
                "policy": {
                    "kind": "linear-softmax",
                    "n_features": task.n_features,
                    "n_actions": task.n_actions,
                    "temperature": policy.temperature,
                },
            }
            path = save_checkpoint(out_dir, step, policy.weights, meta)
            result.checkpoints.append(path)
            if on_checkpoint is not None:
                on_checkpoint(step, path)
    return result
