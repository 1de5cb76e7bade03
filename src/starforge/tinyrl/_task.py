"""The toy task: addition prompts "a+b=?" over small operands, encoded one-hot, rewarded 1 for the exact sum."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["AdditionTask"]


@dataclass(frozen=True)
class AdditionTask:
    """Prompts are operand pairs in 0..max_operand; answers are the sums 0..2*max_operand."""

    max_operand: int = 9

    @property
    def n_operands(self) -> int:
        """Return how many values one operand can take."""
        return self.max_operand + 1

    @property
    def n_features(self) -> int:
        """Return the feature width: one slot per (a, b) prompt plus a bias."""
        return self.n_operands * self.n_operands + 1

    @property
    def n_actions(self) -> int:
        """Return how many answers the policy chooses from."""
        return 2 * self.max_operand + 1

    def sample_prompts(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """Return `count` prompts drawn uniformly, as an integer array of shape (count, 2)."""
        return np.asarray(rng.integers(0, self.n_operands, size=(count, 2)))

    def features(self, prompts: np.ndarray) -> np.ndarray:
        """Return the one-hot features of `prompts`, shape (len(prompts), n_features)."""
        rows = np.arange(len(prompts))
        out = np.zeros((len(prompts), self.n_features))
        out[rows, prompts[:, 0] * self.n_operands + prompts[:, 1]] = 1.0
        out[:, -1] = 1.0
        return out

    def answers(self, prompts: np.ndarray) -> np.ndarray:
        """Return the right answer of each prompt."""
        return np.asarray(prompts.sum(axis=1))

    def rewards(self, prompts: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Return 1.0 where an action (shape (P, G)) is the prompt's sum, else 0.0."""
        return np.asarray(actions == self.answers(prompts)[:, None], dtype=float)
