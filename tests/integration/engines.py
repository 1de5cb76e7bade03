"""The cluster engines of the executor conformance suite: a Slurm and a Ray executor on the services of
`scripts/services.sh up` (skipped loudly without them, failed under CI), and how a job vanishes on each."""

from __future__ import annotations

import os

from starforge.engines import Executor, LaunchRequest
from starforge.engines.slurm import SlurmExecutor, SlurmSettings
from tests.conftest import _service_env, require_service

NEVER_KNOWN_SLURM_ID = "67100000"  # above any id this test cluster hands out (its ids start at 1)


def slurm_env() -> dict[str, str]:
    """Return the environment the Slurm commands need (SLURM_CONF of the test cluster); skip without Slurm."""
    require_service("Slurm", "SLURM_AVAILABLE", "run `scripts/services.sh up`")
    conf = os.environ.get("SLURM_CONF") or _service_env().get("SLURM_CONF", "")
    return {"SLURM_CONF": conf} if conf else {}


def slurm_executor() -> Executor:
    return SlurmExecutor(SlurmSettings(), stop_grace=2.0, env=slurm_env())


def slurm_lost(executor: Executor, request: LaunchRequest) -> str:
    """A job Slurm never knew (as after its records expired), in a run folder without an exit record."""
    request.run_dir.mkdir(parents=True, exist_ok=True)
    return f"slurm:{NEVER_KNOWN_SLURM_ID}:{request.run_dir}"


def ray_executor() -> Executor:
    """A Ray executor on the head of `scripts/services.sh up` (stop escalates to SIGKILL after 1 s)."""
    address = require_service("Ray", "RAY_ADDRESS", "run `scripts/services.sh up`")
    from starforge.engines.ray.config import RaySettings
    from starforge.engines.ray.executor import RayExecutor

    return RayExecutor(RaySettings(), address, stop_grace=1.0)


def ray_lost(executor: Executor, request: LaunchRequest) -> str:
    """A submission Ray never knew (as after its head was replaced), in a run folder without an exit record."""
    request.run_dir.mkdir(parents=True, exist_ok=True)
    return f"ray:sf-never-submitted-{request.run_id}:{request.run_dir}"
