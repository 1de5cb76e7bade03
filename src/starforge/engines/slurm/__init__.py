"""The Slurm engine: its settings, the batch script of a job, Slurm states in StarForge's terms, and the executor."""

from .config import CONTAINER_MODES, RAY_FRAMEWORKS, SlurmSeries, SlurmSettings, slurm_settings_from
from .executor import SlurmExecutor
from .script import SlurmJob, SlurmPool, render_batch, slurm_time
from .states import Mapped, SlurmJobState, map_state, parse_sacct, parse_squeue, waiting_text

__all__ = [
    "CONTAINER_MODES",
    "RAY_FRAMEWORKS",
    "Mapped",
    "SlurmJob",
    "SlurmJobState",
    "SlurmExecutor",
    "SlurmPool",
    "SlurmSeries",
    "SlurmSettings",
    "map_state",
    "parse_sacct",
    "parse_squeue",
    "render_batch",
    "slurm_settings_from",
    "slurm_time",
    "waiting_text",
]
