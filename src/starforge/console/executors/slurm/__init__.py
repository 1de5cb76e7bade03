"""The Slurm engine, pure parts: its settings, the batch script of a job, and Slurm states in StarForge's terms."""

from .config import CONTAINER_MODES, RAY_FRAMEWORKS, SlurmSeries, SlurmSettings, slurm_settings_from
from .script import SlurmJob, SlurmPool, render_batch, slurm_time
from .states import Mapped, SlurmJobState, map_state, parse_sacct, parse_squeue

__all__ = [
    "CONTAINER_MODES",
    "RAY_FRAMEWORKS",
    "Mapped",
    "SlurmJob",
    "SlurmJobState",
    "SlurmPool",
    "SlurmSeries",
    "SlurmSettings",
    "map_state",
    "parse_sacct",
    "parse_squeue",
    "render_batch",
    "slurm_settings_from",
    "slurm_time",
]
