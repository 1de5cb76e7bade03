"""A linear softmax policy over the task's answers: logits = features @ weights / temperature."""

from __future__ import annotations

import numpy as np

__all__ = ["LinearSoftmaxPolicy", "softmax"]


def softmax(logits: np.ndarray) -> np.ndarray:
    """Return the row-wise softmax of `logits`, computed stably."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return np.asarray(exp / exp.sum(axis=-1, keepdims=True))


class LinearSoftmaxPolicy:
    """A weight matrix of shape (n_features, n_actions) sampled at a fixed temperature."""

    def __init__(self, weights: np.ndarray, temperature: float = 1.0) -> None:
        self.weights = np.array(weights, dtype=float)
        self.temperature = float(temperature)

    @classmethod
    def initial(
        cls, n_features: int, n_actions: int, rng: np.random.Generator, *, scale: float, temperature: float
    ) -> LinearSoftmaxPolicy:
        """Return a near-uniform policy with small random weights."""
        return cls(rng.normal(0.0, scale, size=(n_features, n_actions)), temperature)

    def probs(self, features: np.ndarray) -> np.ndarray:
        """Return the action distribution of each feature row."""
        return softmax(features @ self.weights / self.temperature)

    def sample(self, probs: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
        """Return `count` sampled actions per row of `probs`, shape (rows, count)."""
        cumulative = probs.cumsum(axis=1)
        draws = rng.random((len(probs), count))
        actions = (draws[:, :, None] > cumulative[:, None, :]).sum(axis=2)
        return np.asarray(np.minimum(actions, probs.shape[1] - 1))

    def greedy(self, features: np.ndarray) -> np.ndarray:
        """Return the most likely action of each feature row."""
        return np.asarray((features @ self.weights).argmax(axis=1))
