"""The engine side: engines run launched jobs behind the `Executor` seam (`base`); the local one (processes on this
machine, sandboxed by `isolation`) is exported here, the cluster ones live in their folders (`slurm/`, `ray/`), and
`registry` is the one table of engines the console's settings and start-up loop over. It imports only the contract,
the wire, the bundle and the standard library (declared in `[tool.importlinter]`)."""

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
