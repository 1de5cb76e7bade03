"""Executors run launched jobs: the `Executor` seam, and the local executor (processes on this machine)."""

from .base import (
    ExecState,
    Executor,
    ExecutorError,
    JobPaths,
    JobRefused,
    LaunchRequest,
    Limits,
    Mount,
    PoolShape,
    ref_parts,
)
from .isolation import Isolation, IsolationConfig
from .local import LocalExecutor
from .sandbox import SandboxUnavailable

__all__ = [
    "ExecState",
    "Executor",
    "ExecutorError",
    "Isolation",
    "IsolationConfig",
    "JobPaths",
    "JobRefused",
    "LaunchRequest",
    "Limits",
    "LocalExecutor",
    "Mount",
    "PoolShape",
    "SandboxUnavailable",
    "ref_parts",
]
