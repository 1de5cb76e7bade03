"""The console's start banner: how the jobs of each engine it drives are isolated, told truthfully per engine."""

from __future__ import annotations

import os

from ..engines.isolation import Isolation
from ..engines.jobnet import JobNetwork, describe
from .settings import Settings

__all__ = ["sandbox_banner"]


def sandbox_banner(settings: Settings, isolation: Isolation) -> str:
    """Return one clause per engine of `settings`: local jobs' sandbox, Slurm's node sandbox, Ray's lack of one."""
    clauses = []
    engines = settings.engines()
    if "local" in engines:
        clauses.append("local jobs: " + isolation.describe().removeprefix("job sandbox: "))
    if "slurm" in engines:
        slurm = settings.slurm
        if slurm.sandbox:
            who = "per-job uids" if os.getuid() == 0 else "user namespace"
            clauses.append(f"slurm jobs: bubblewrap on their nodes, {who}; {describe(JobNetwork(slurm.network))}"
                           " (Ray-on-Slurm recipes unsandboxed)")
        else:
            clauses.append("slurm jobs: NOT sandboxed (executors.slurm.sandbox: off)")
    if "ray" in engines:
        clauses.append("ray jobs: NOT sandboxed (they run as the Ray cluster's own user)")
    if not settings.images.run:
        clauses.append("images: NOT run (images.run: false): jobs that name an image run on this machine's system")
    return "; ".join(clauses) or "job sandbox: no engine"
