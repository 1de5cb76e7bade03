"""One GRPO update: sample a group per prompt, normalise rewards within each group, and return the loss gradient."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from starforge.tinyrl._policy import LinearSoftmaxPolicy, softmax
from starforge.tinyrl._task import AdditionTask

__all__ = ["StepStats", "grpo_step"]

_EPS = 1e-6
_TINY = 1e-12


@dataclass(frozen=True)
class StepStats:
    """What one step measured on its own samples, before the update."""

    reward: float
    loss: float
    kl: float
    entropy: float


def grpo_step(
    policy: LinearSoftmaxPolicy,
    reference: np.ndarray,
    task: AdditionTask,
    prompts: np.ndarray,
    rng: np.random.Generator,
    *,
    generations: int,
    kl_penalty: float,
    normalize_rewards: bool = True,
) -> tuple[np.ndarray, StepStats]:
    """Return the gradient of the GRPO loss with respect to the policy weights, and the step's statistics.

    The loss is `-mean(advantage * log pi(answer)) + kl_penalty * mean KL(pi || reference)`. Samples are on-policy
    and used for a single update, so the clipped importance ratio of PPO-style GRPO is identically 1 and omitted;
    the KL to the reference policy is exact (the answer space is small enough to sum over).
    """
    features = task.features(prompts)
    temperature = policy.temperature
    probs = policy.probs(features)
    actions = policy.sample(probs, generations, rng)
    rewards = task.rewards(prompts, actions)

    centred = rewards - rewards.mean(axis=1, keepdims=True)
    advantages = centred / (rewards.std(axis=1, keepdims=True) + _EPS) if normalize_rewards else centred

    n_prompts, n_actions = probs.shape
    one_hot = np.zeros((n_prompts, generations, n_actions))
    one_hot[np.arange(n_prompts)[:, None], np.arange(generations)[None, :], actions] = 1.0
    log_probs = np.log(probs + _TINY)
    chosen = np.take_along_axis(log_probs, actions, axis=1)
    pg_loss = -float((advantages * chosen).mean())
    # d log pi(a) / d logits = onehot(a) - pi, and the logits are scaled by 1/temperature.
    grad_logits = -(advantages[:, :, None] * (one_hot - probs[:, None, :])).sum(axis=1) / (n_prompts * generations)

    ref_log_probs = np.log(softmax(features @ reference / temperature) + _TINY)
    log_ratio = log_probs - ref_log_probs
    kl_rows = (probs * log_ratio).sum(axis=1)
    # d KL(pi || ref) / d logits = pi * (log pi - log ref - KL).
    grad_logits += kl_penalty * probs * (log_ratio - kl_rows[:, None]) / n_prompts
    grad = features.T @ (grad_logits / temperature)

    kl = float(kl_rows.mean())
    stats = StepStats(
        reward=float(rewards.mean()),
        loss=pg_loss + kl_penalty * kl,
        kl=kl,
        entropy=float(-(probs * log_probs).sum(axis=1).mean()),
    )
    return grad, stats
