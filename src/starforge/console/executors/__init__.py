"""Executors run launched jobs: the `Executor` seam, and the local executor (processes on this machine)."""

from .base import ExecState, Executor, ExecutorError, LaunchRequest
from .local import LocalExecutor

__all__ = ["ExecState", "Executor", "ExecutorError", "LaunchRequest", "LocalExecutor"]
