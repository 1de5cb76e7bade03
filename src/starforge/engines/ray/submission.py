"""The Jobs API submission of a job, rendered without Ray: entrypoint, runtime_env, entrypoint resources, placement.

The entrypoint runs the request's argv (forge-launch on its interpreter) with its output appended to the run's log
file, so logs live in the run folder (shared storage) as on the local executor. A job whose driver does the work
(one pool, one node, a framework that does not start Ray workers itself) reserves its GPUs or CPUs as entrypoint
resources; any other job (several nodes or pools, or a Ray-based framework) gets a placement description instead:
one bundle per node, `{"GPU": per_node, "<series resource>": 0.001}` (`{"CPU": per_node}` on a CPU series), which
its driver turns into a STRICT_SPREAD placement group. The description travels in `$FORGE_RAY_PLACEMENT` and in the
submission's metadata. The series resource is a label: a small fraction of it pins a bundle to the series' nodes.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from typing import Any

from ...contract import INGEST_TOKEN_VARIABLE
from ...wire import EXIT_FILE_VARIABLE
from ..base import LaunchRequest, PoolShape
from .config import RaySettings

__all__ = ["PIN", "PLACEMENT_VARIABLE", "STOP_WAIT_VARIABLE", "RaySubmission", "placement_for", "render_submission"]

PLACEMENT_VARIABLE = "FORGE_RAY_PLACEMENT"
STOP_WAIT_VARIABLE = "RAY_JOB_STOP_WAIT_TIME_S"  # read by Ray's job supervisor: SIGTERM, then SIGKILL after it
PIN = 0.001  # how much of a series resource a bundle takes: enough to pin it, never a node's whole label


@dataclass(frozen=True)
class RaySubmission:
    """The arguments of `JobSubmissionClient.submit_job` for one job."""

    submission_id: str
    entrypoint: str
    runtime_env: dict[str, Any]
    metadata: dict[str, str] = field(default_factory=dict)
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_resources: dict[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the keyword arguments of `submit_job` (unset entrypoint resources left out)."""
        out: dict[str, Any] = {"submission_id": self.submission_id, "entrypoint": self.entrypoint,
                               "runtime_env": self.runtime_env, "metadata": self.metadata}
        for key in ("entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_resources"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


def _bundle(pool: PoolShape, settings: RaySettings) -> dict[str, float]:
    if settings.is_cpu(pool.series):
        return {"CPU": float(pool.per_node)}
    return {"GPU": float(pool.per_node), settings.resource_for(pool.series): PIN}


def placement_for(pools: tuple[PoolShape, ...], settings: RaySettings) -> dict[str, Any]:
    """Return the placement description: one bundle per node of every pool, each pool's bundle indices."""
    bundles: list[dict[str, float]] = []
    described: list[dict[str, Any]] = []
    for pool in pools:
        first = len(bundles)
        bundles.extend(_bundle(pool, settings) for _ in range(pool.nodes))
        described.append({"series": pool.series, "nodes": pool.nodes, "per_node": pool.per_node,
                          "resource": settings.resource_for(pool.series),
                          "bundles": list(range(first, len(bundles)))})
    return {"strategy": "STRICT_SPREAD", "bundles": bundles, "pools": described}


def _entrypoint(argv: tuple[str, ...], log_file: str, token_file: str) -> str:
    read = f'{INGEST_TOKEN_VARIABLE}="$(cat -- {shlex.quote(token_file)})" ' if token_file else ""
    return f"{read}exec {shlex.join(argv)} >> {shlex.quote(log_file)} 2>&1"


def render_submission(request: LaunchRequest, settings: RaySettings, *, submission_id: str, log_file: str,
                      exit_file: str, stop_grace: float, requirements: tuple[str, ...] = (),
                      token_file: str = "") -> RaySubmission:
    """Return the submission of `request`; `requirements` (a runtime's) go to `pip` when nodes do not share it.

    The run token never travels in `env_vars` (anyone who can reach the Jobs API reads those): with `token_file`,
    the entrypoint reads it from that 0600 file of the run folder.

    With `requirements`, the runtime's own interpreter (argv[0]) is not on the nodes: the entrypoint runs `python`,
    the interpreter of the environment Ray builds from them.
    """
    argv = request.argv
    env = {**request.env, EXIT_FILE_VARIABLE: exit_file, STOP_WAIT_VARIABLE: str(max(1, math.ceil(stop_grace)))}
    env.pop(INGEST_TOKEN_VARIABLE, None)
    runtime_env: dict[str, Any] = {"working_dir": request.cwd}
    if requirements and not settings.shared_runtime:
        runtime_env["pip"] = list(requirements)
        argv = ("python", *argv[1:])
    metadata = {"starforge_run_id": request.run_id}
    pools = request.pools
    single = len(pools) == 1 and pools[0].nodes == 1
    num_cpus = num_gpus = None
    resources: dict[str, float] | None = None
    if pools and (not single or settings.uses_ray(request.framework)):
        placement = json.dumps(placement_for(pools, settings), sort_keys=True, separators=(",", ":"))
        env[PLACEMENT_VARIABLE] = placement
        metadata["starforge_placement"] = placement
    elif pools:
        pool = pools[0]
        if settings.is_cpu(pool.series):
            num_cpus = float(pool.per_node)
        else:
            num_gpus = float(pool.per_node)
            resources = {settings.resource_for(pool.series): PIN}
    runtime_env["env_vars"] = env
    return RaySubmission(submission_id=submission_id, entrypoint=_entrypoint(argv, log_file, token_file), runtime_env=runtime_env,
                         metadata=metadata, entrypoint_num_cpus=num_cpus, entrypoint_num_gpus=num_gpus,
                         entrypoint_resources=resources)
