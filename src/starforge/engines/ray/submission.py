"""The Jobs API submission of a job, rendered without Ray: entrypoint, runtime_env, entrypoint resources, placement.

The entrypoint runs the request's argv (forge-launch on its interpreter) with its output appended to the run's log
file, so logs live in the run folder (shared storage) as on the local executor; a sandboxed job (`Sandboxed`) runs
it through the node's helper and bubblewrap (`node_sandbox.node_command`), its options read from descriptor 9, with
SIGTERM ignored by everything but the job (Ray's stop signals every process the entrypoint started). A job whose
driver does the work (one pool, one node, a framework that does not start Ray workers itself) reserves its GPUs or
CPUs as entrypoint resources; any other job (several nodes or pools, or a Ray-based framework) gets a placement
description instead: one bundle per node, `{"GPU": per_node, "<series resource>": 0.001}` (`{"CPU": per_node}` on
a CPU series), in `$FORGE_RAY_PLACEMENT` and in the submission's metadata. A Ray-based framework's driver turns it
into its own placement group; any other multi-node job's entrypoint is the gang launcher (`gang`, with `gang_file`),
which reserves it STRICT_SPREAD and runs one rank per bundle. The series resource is a label: a small fraction of
it pins a bundle to the series' nodes.
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
from ..node_sandbox import ARGS_FD
from .config import RaySettings

__all__ = ["GANG_MARGIN", "PIN", "PLACEMENT_VARIABLE", "STOP_WAIT_VARIABLE", "RaySubmission", "Sandboxed",
           "is_gang", "placement_for", "render_submission"]

PLACEMENT_VARIABLE = "FORGE_RAY_PLACEMENT"
STOP_WAIT_VARIABLE = "RAY_JOB_STOP_WAIT_TIME_S"  # read by Ray's job supervisor: SIGTERM, then SIGKILL after it
PIN = 0.001  # how much of a series resource a bundle takes: enough to pin it, never a node's whole label
GANG_MARGIN = 10  # seconds Ray waits beyond the grace for a gang launcher, which stops its ranks itself
GANG_MODULE = "starforge.engines.ray.gang"


@dataclass(frozen=True)
class Sandboxed:
    """How a job starts in the job sandbox on its node: the node's command (helper, bubblewrap, the inside argv)
    and the run's bubblewrap options file, opened as descriptor 9."""

    command: tuple[str, ...]
    args_file: str


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


def is_gang(request: LaunchRequest, settings: RaySettings) -> bool:
    """Return True when the job runs as a gang of ranks, one per node: several nodes, a framework without Ray."""
    return sum(p.nodes for p in request.pools) > 1 and not settings.uses_ray(request.framework)


def _entrypoint(argv: tuple[str, ...], log_file: str, token_file: str, sandboxed: Sandboxed | None) -> str:
    read = f'{INGEST_TOKEN_VARIABLE}="$(cat -- {shlex.quote(token_file)})" ' if token_file else ""
    if sandboxed is None:
        return f"{read}exec {shlex.join(argv)} >> {shlex.quote(log_file)} 2>&1"
    # Ray's stop signals every process of the entrypoint: the helper and bubblewrap ignore SIGTERM (they would end
    # the job's network and sandbox at once), and `env --default-signal` gives the job its default action back
    return (f'trap "" TERM; {read}exec {shlex.join(sandboxed.command)} {ARGS_FD}<{shlex.quote(sandboxed.args_file)} '
            f">> {shlex.quote(log_file)} 2>&1")


def render_submission(request: LaunchRequest, settings: RaySettings, *, submission_id: str, log_file: str,
                      exit_file: str, stop_grace: float, requirements: tuple[str, ...] = (),
                      token_file: str = "", sandboxed: Sandboxed | None = None, gang_file: str = "",
                      python: str = "python3") -> RaySubmission:
    """Return the submission of `request`; `requirements` (a runtime's) go to `pip` when nodes do not share it.

    The run token never travels in `env_vars` (anyone who can reach the Jobs API reads those): with `token_file`,
    the entrypoint reads it from that 0600 file of the run folder. With `sandboxed`, the job runs in the job
    sandbox of its node (and its working folder is the run's own, on shared storage, not a copy Ray uploads). With
    `gang_file`, the entrypoint is the gang launcher on `python` (an interpreter with ray), reading that file; each
    of its ranks reads the token file itself.

    With `requirements`, the runtime's own interpreter (argv[0]) is not on the nodes: the entrypoint runs `python`,
    the interpreter of the environment Ray builds from them.
    """
    argv = request.argv
    wait = max(1, math.ceil(stop_grace)) + (GANG_MARGIN if gang_file else 0)
    env = {**request.env, EXIT_FILE_VARIABLE: exit_file, STOP_WAIT_VARIABLE: str(wait)}
    env.pop(INGEST_TOKEN_VARIABLE, None)
    # sandboxed or a gang, the job works in its own folder (shared storage), not in a copy Ray uploads
    runtime_env: dict[str, Any] = {} if sandboxed is not None or gang_file else {"working_dir": request.cwd}
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
    if gang_file:
        entrypoint = f"exec {shlex.join((python, '-I', '-m', GANG_MODULE, gang_file))} >> {shlex.quote(log_file)} 2>&1"
    else:
        entrypoint = _entrypoint(argv, log_file, token_file, sandboxed)
    return RaySubmission(submission_id=submission_id, entrypoint=entrypoint, runtime_env=runtime_env,
                         metadata=metadata, entrypoint_num_cpus=num_cpus, entrypoint_num_gpus=num_gpus,
                         entrypoint_resources=resources)
