"""tinyrl internals: the GRPO gradient matches finite differences of the loss; checkpoints round-trip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from starforge.tinyrl import (
    AdditionTask,
    CheckpointError,
    LinearSoftmaxPolicy,
    grpo_step,
    load_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
)


def _loss(weights: np.ndarray, reference: np.ndarray, task: AdditionTask, prompts: np.ndarray) -> float:
    policy = LinearSoftmaxPolicy(weights, temperature=0.7)
    _, stats = grpo_step(policy, reference, task, prompts, np.random.default_rng(5), generations=6, kl_penalty=0.5)
    return stats.loss


def test_gradient_matches_finite_differences() -> None:
    task = AdditionTask(3)
    rng = np.random.default_rng(0)
    weights = rng.normal(0.0, 0.5, size=(task.n_features, task.n_actions))
    reference = rng.normal(0.0, 0.5, size=weights.shape)
    prompts = task.sample_prompts(rng, 12)
    policy = LinearSoftmaxPolicy(weights, temperature=0.7)
    grad, _ = grpo_step(policy, reference, task, prompts, np.random.default_rng(5), generations=6, kl_penalty=0.5)
    eps = 1e-6
    for row, col in [(int(prompts[0, 0] * 4 + prompts[0, 1]), 2), (task.n_features - 1, 0), (task.n_features - 1, 5)]:
        bumped = weights.copy()
        bumped[row, col] += eps
        lowered = weights.copy()
        lowered[row, col] -= eps
        numeric = (_loss(bumped, reference, task, prompts) - _loss(lowered, reference, task, prompts)) / (2 * eps)
        assert grad[row, col] == pytest.approx(numeric, rel=1e-4, abs=1e-7)


def test_rewards_and_advantages_of_a_solved_task() -> None:
    task = AdditionTask(2)
    weights = np.zeros((task.n_features, task.n_actions))
    grid = np.array([(a, b) for a in range(3) for b in range(3)])
    weights[grid[:, 0] * 3 + grid[:, 1], grid.sum(axis=1)] = 50.0
    policy = LinearSoftmaxPolicy(weights)
    grad, stats = grpo_step(policy, weights, task, grid, np.random.default_rng(1), generations=4, kl_penalty=0.1)
    assert stats.reward == 1.0
    assert stats.kl == pytest.approx(0.0)
    assert np.abs(grad).max() < 1e-9  # every group is uniform: no advantage, no KL


def test_checkpoint_round_trip_and_latest_resolution(tmp_path: Path) -> None:
    weights = np.arange(6, dtype=float).reshape(2, 3)
    for step in (2, 10, 9):
        save_checkpoint(tmp_path, step, weights * step, {"reward": step / 10})
    assert resolve_checkpoint(tmp_path) == tmp_path / "checkpoints" / "step_10"
    loaded = load_checkpoint(tmp_path / "checkpoints")
    assert (loaded.step, loaded.reward) == (10, 1.0)
    np.testing.assert_array_equal(loaded.weights, weights * 10)
    assert not list((tmp_path / "checkpoints").glob(".tmp-*"))


def test_missing_checkpoint_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "nothing")
    with pytest.raises(CheckpointError, match="no model.npz"):
        load_checkpoint(tmp_path)
