"""Reward functions of this experiment: TRL calls each with the batch's completions and the dataset's columns."""

from __future__ import annotations

from typing import Any


def reward_brevity(completions: list[Any], **columns: Any) -> list[float]:
    """Return a score in (0, 1] that falls with the completion's length (1.0 for an empty one)."""
    out = []
    for completion in completions:
        text = completion[-1]["content"] if isinstance(completion, list) else str(completion)
        out.append(1.0 / (1.0 + len(text) / 100.0))
    return out
