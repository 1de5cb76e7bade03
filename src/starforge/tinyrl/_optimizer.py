"""First-order optimizers over one weight matrix: Adam and plain SGD, with their state saved and restored exactly."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Optimizer", "OptimizerStateError", "make_optimizer"]


class OptimizerStateError(ValueError):
    """Raised when a saved optimizer state does not fit the optimizer it is loaded into."""


class Optimizer:
    """Plain gradient descent; subclasses change how a gradient becomes a step."""

    name = "sgd"

    def __init__(self, lr: float) -> None:
        self.lr = lr

    def step(self, weights: np.ndarray, grad: np.ndarray) -> None:
        """Update `weights` in place from `grad`."""
        weights -= self.lr * grad

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Return the optimizer's state: JSON scalars (with its `name`) and arrays (a checkpoint saves both)."""
        return {"name": self.name}, {}

    def load_state(self, scalars: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Restore a state `state()` returned; raise OptimizerStateError when it belongs to another optimizer."""
        if scalars.get("name") != self.name:
            raise OptimizerStateError(f"the saved optimizer is {scalars.get('name')!r}, the config's is {self.name!r}")


class _Adam(Optimizer):
    name = "adam"

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

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays = {} if self.m is None or self.v is None else {"m": self.m.copy(), "v": self.v.copy()}
        return {"name": self.name, "t": self.t}, arrays

    def load_state(self, scalars: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().load_state(scalars, arrays)
        t = scalars.get("t")
        if isinstance(t, bool) or not isinstance(t, int) or t < 0:
            raise OptimizerStateError(f"the saved Adam step count {t!r} is not a count")
        if t and not ("m" in arrays and "v" in arrays):
            raise OptimizerStateError("the saved Adam state has a step count but no moments")
        self.t = t
        self.m = np.array(arrays["m"], dtype=float) if t else None
        self.v = np.array(arrays["v"], dtype=float) if t else None


def make_optimizer(name: str, lr: float) -> Optimizer:
    """Return the optimizer called `name` (`adam` or `sgd`) with learning rate `lr`."""
    if name == "adam":
        return _Adam(lr)
    if name == "sgd":
        return Optimizer(lr)
    raise ValueError(f"unknown optimizer {name!r}")
