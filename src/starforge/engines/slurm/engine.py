"""The Slurm engine's factory for the registry (its settings reader is `config.slurm_settings_from`)."""

from __future__ import annotations

from ..factory import EngineContext
from .config import SlurmSettings
from .executor import SlurmExecutor

__all__ = ["build"]


def build(settings: SlurmSettings, context: EngineContext) -> SlurmExecutor:
    """Return the Slurm executor of `executors.slurm`, its runs under the console's state folder, its jobs' uids
    taken from the pool the engines share."""
    return SlurmExecutor(settings, stop_grace=context.stop_grace, storage_root=context.state_dir, uids=context.uids)
