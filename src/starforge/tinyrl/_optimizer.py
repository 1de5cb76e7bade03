"""First-order optimizers over one weight matrix: Adam and plain SGD."""

from __future__ import annotations

import numpy as np

__all__ = ["Optimizer", "make_optimizer"]


class Optimizer:
    """Plain gradient descent; subclasses change how a gradient becomes a step."""

    def __init__(self, lr: float) -> None:
        self.lr = lr

    def step(self, weights: np.ndarray, grad: np.ndarray) -> None:
        """Update `weights` in place from `grad`."""
        weights -= self.lr * grad


class _Adam(Optimizer):
    def __init__(self, lr: float, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> None:
        super().__init__(lr)
        self.beta1, self.beta2, self.eps = beta1, beta2, eps
        self.t = 0
        self.m: np.ndarray | None = None
        self.v: np.ndarray | None = None

    def step(self, weights: np.ndarray, grad: np.ndarray) -> None:
        if self.m is None or self.v is None:
            self.m, self.v = np.zeros_like(grad), np.zeros_like(grad)
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * grad
        self.v = self.beta2 * self.v + (1 - self.beta2) * grad * grad
        m_hat = self.m / (1 - self.beta1**self.t)
        v_hat = self.v / (1 - self.beta2**self.t)
        weights -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


def make_optimizer(name: str, lr: float) -> Optimizer:
    """Return the optimizer called `name` (`adam` or `sgd`) with learning rate `lr`."""
    if name == "adam":
        return _Adam(lr)
    if name == "sgd":
        return Optimizer(lr)
    raise ValueError(f"unknown optimizer {name!r}")
