"""tinyrl: a numpy-only toy RL framework that really trains (GRPO on single-digit addition) on one CPU in seconds."""

from starforge.tinyrl._checkpoint import (
    Checkpoint,
    CheckpointError,
    load_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
)
from starforge.tinyrl._config import ConfigProblem, TrainConfig, load_config, type_literal
from starforge.tinyrl._grpo import StepStats, grpo_step
from starforge.tinyrl._policy import LinearSoftmaxPolicy
from starforge.tinyrl._task import AdditionTask

__all__ = [
    "AdditionTask",
    "Checkpoint",
    "CheckpointError",
    "ConfigProblem",
    "LinearSoftmaxPolicy",
    "StepStats",
    "TrainConfig",
    "grpo_step",
    "load_checkpoint",
    "load_config",
    "resolve_checkpoint",
    "save_checkpoint",
    "type_literal",
]
