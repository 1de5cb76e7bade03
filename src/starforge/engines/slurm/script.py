"""Render the Slurm batch script of one job (`render_batch`): its shape as `#SBATCH` lines, then how it starts.

A job on one node runs `argv` as the batch script itself (`exec`; through `srun` when pyxis runs its container),
on several nodes through `srun` (one task per node, with a torchrun-style rendezvous in the environment), or, for
a recipe launched through Ray, starts a Ray cluster over its nodes and runs `argv` once as the driver. Several pools become a heterogeneous job (one component per pool). Every environment value is exported
shell-quoted; nothing is interpreted by the shell except what this module writes itself. The run token is never
written into the script: it is read at start from `<run_dir>/run-token` (`TOKEN_FILE`), which the executor writes
with mode 0600 next to the script, so the script can be kept, shown and accounted by Slurm without the secret.
A sandboxed job (`SlurmJob.sandbox`, the bubblewrap command) starts as `bwrap --args 9 -- <argv> 9<<run>/sandbox.args`
on each node, behind the node's network helper (`SlurmJob.network_helper`) when it has one: the options file (`SANDBOX_ARGS_FILE`, written by the executor) names its view, and `argv` is the
command inside it; the script itself never enters a job-side path (bubblewrap's `--chdir` does). Sandboxed on
several nodes (`SlurmJob.fabric`), each node's helper joins its rank to the job fabric (`engines.fabric`): the
rendezvous address is rank 0's fabric address and the socket interfaces of gloo and NCCL name the fabric.
"""

from __future__ import annotations

import math
import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from ...contract import INGEST_TOKEN_VARIABLE
from ...wire import EXIT_FILE_VARIABLE
from ..base import JobRefused
from ..fabric import FABRIC_IFNAME, address_of
from ..node_sandbox import ARGS_FD, SANDBOX_ARGS_FILE, node_command
from ..run_log import OUTPUT, TOKEN_FILE
from .config import SlurmSeries, SlurmSettings

__all__ = ["SANDBOX_ARGS_FILE", "TOKEN_FILE", "SlurmJob", "SlurmPool", "render_batch", "slurm_time"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATH = re.compile(r"/[A-Za-z0-9_.,:@+/=-]*")  # a path written unquoted on an `#SBATCH` line (no %, no spaces)
_NAME = re.compile(r"[^A-Za-z0-9_.-]")


class SlurmPool(NamedTuple):
    """One pool of the job: `nodes` nodes of `series`, each with `gpus_per_node` slots (GPUs, or CPUs)."""

    series: str
    nodes: int
    gpus_per_node: int


@dataclass(frozen=True)
class SlurmJob:
    """What the Slurm executor knows of a job when it writes its batch script (paths as every node sees them)."""

    run_id: str
    name: str
    run_dir: str
    logs: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    pools: tuple[SlurmPool, ...]
    time_limit_seconds: float | None = None  # the job's wall-time limit; None: the settings' default
    image: str = ""  # the container image (container modes pyxis and apptainer)
    uses_ray: bool = False
    python: str = "python3"  # the runtime's interpreter; `ray` is taken from the same folder
    sandbox: str = ""  # the bubblewrap command that starts `argv` in the job's view; "": unsandboxed
    network_helper: tuple[str, ...] = ()  # the node's helper around bubblewrap (its network and channel); (): none
    fabric: str = ""  # several sandboxed nodes: the run's fabric folder, which joins the ranks (`engines.fabric`)


def slurm_time(seconds: float) -> str:
    """Return a duration as Slurm's `D-HH:MM:SS` (rounded up to the second)."""
    total = max(1, math.ceil(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"


def _q(words: list[str] | tuple[str, ...]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def _check(job: SlurmJob, settings: SlurmSettings) -> None:
    if not job.argv:
        raise JobRefused("the job has no command to run")
    if not job.pools:
        raise JobRefused("the job has no pool to place")
    for what, path in (("run folder", job.run_dir), ("log folder", job.logs)):
        if not _PATH.fullmatch(path):
            raise JobRefused(f"the {what} {path!r} cannot be named on an #SBATCH line (it must be an absolute path "
                             "without spaces, quotes or %): choose a state directory with a plain path")
    for name in job.env:
        if not _ENV_NAME.fullmatch(name):
            raise JobRefused(f"the environment variable name {name!r} is not a valid shell name")
    for pool in job.pools:
        if pool.nodes < 1 or pool.gpus_per_node < 1:
            raise JobRefused(f"the {pool.series} pool needs at least one node and one slot per node")
        size = settings.series_for(pool.series).gpus_per_node
        if size and pool.gpus_per_node > size:
            raise JobRefused(f"the {pool.series} pool asks {pool.gpus_per_node} GPUs per node, but a {pool.series} "
                             f"node has {size} (executors.slurm.series.{pool.series}.gpus_per_node)")
    if job.sandbox and (job.uses_ray or settings.container != "none"):
        raise JobRefused("the job sandbox cannot wrap a Ray world or a container (executors.slurm.sandbox)")
    if settings.container != "none" and not job.image:
        raise JobRefused(f"container mode {settings.container} needs the job's image (spec.resources.image)")


def _shape(pool: SlurmPool, series: SlurmSeries) -> list[str]:
    lines = [f"--nodes={pool.nodes}", "--ntasks-per-node=1"]
    if series.gres:
        lines.append(f"--gres={series.gres}:{pool.gpus_per_node}")
    else:
        lines.append(f"--cpus-per-task={pool.gpus_per_node}")
    for key in ("partition", "constraint", "account", "qos"):
        value = getattr(series, key)
        if value:
            lines.append(f"--{key}={value}")
    return lines


def _header(job: SlurmJob, settings: SlurmSettings) -> list[str]:
    name = _NAME.sub("-", job.name)[:64] or "starforge"
    output = posixpath.join(job.logs, OUTPUT)
    # --no-requeue: Slurm never starts the job again by itself; a job whose node failed ends (NODE_FAIL) and the
    # console starts its next attempt, which resumes from the latest checkpoint with a fresh ingest token
    first = [f"--job-name={name}", f"--output={output}", f"--error={output}", "--open-mode=append", "--no-requeue"]
    seconds = job.time_limit_seconds if job.time_limit_seconds else settings.time_limit_hours * 3600
    if seconds:
        first.append(f"--time={slurm_time(seconds)}")
    first.extend(settings.sbatch_options)
    lines = ["#!/bin/bash"]
    for i, pool in enumerate(job.pools):
        if i:
            lines.append("#SBATCH hetjob")
        options = (first if i == 0 else []) + _shape(pool, settings.series_for(pool.series))
        lines.extend(f"#SBATCH {option}" for option in options)
    return lines


def _container(job: SlurmJob, settings: SlurmSettings) -> tuple[str, str]:
    """Return the srun options and the command prefix that run a task in the job's image."""
    binds = [job.run_dir, *([settings.runtime_root] if settings.runtime_root else [])]
    if settings.container == "pyxis":
        return (f"--container-image={shlex.quote(job.image)} --container-mounts={shlex.quote(','.join(binds))} "
                f"--container-workdir={shlex.quote(job.cwd)} ", "")
    if settings.container == "apptainer":
        gpus = any(settings.series_for(p.series).gres for p in job.pools)
        bind = " ".join(f"--bind {shlex.quote(b)}" for b in binds)
        return "", f"apptainer exec {'--nv ' if gpus else ''}{bind} --pwd {shlex.quote(job.cwd)} {shlex.quote(job.image)} "
    return "", ""


def _node_lists(count: int) -> list[str]:
    if count == 1:
        return ['hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST")', 'mapfile -t nodes_0 <<<"$hosts"']
    out = []
    for g in range(count):
        out += [f'hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST_HET_GROUP_{g}")',
                f'mapfile -t nodes_{g} <<<"$hosts"']
    return out


def _plain(job: SlurmJob, settings: SlurmSettings, opts: str, prefix: str) -> list[str]:
    argv = _q(job.argv)
    total = sum(p.nodes for p in job.pools)
    redirect, ignore = "", ""  # how each node's task opens bubblewrap's options (a plain path: see _check)
    if job.sandbox:
        # Slurm signals every process of a step: bubblewrap ignores SIGTERM (it would die and end the step), and
        # `env --default-signal` gives the job the default action back, so the job alone decides how it stops
        argv = _q(node_command(job.network_helper, job.sandbox, job.argv))
        redirect = f" {ARGS_FD}<{posixpath.join(job.run_dir, SANDBOX_ARGS_FILE)}"
        ignore = 'trap "" TERM; '
    if total == 1 and not opts:
        # the batch step is the job: Slurm's signals (scancel, the time limit) reach the command itself
        return ["# one node: the script becomes the command", *([ignore.rstrip("; ")] if ignore else []),
                f"exec {prefix}{argv}{redirect}"]
    if total == 1:
        return ["# one node: the command runs as a single task", f"srun --nodes=1 --ntasks=1 {opts}{prefix}{argv}"]
    het = len(job.pools) > 1
    rank = "SLURM_PROCID" if het else "SLURM_NODEID"
    step = f"--het-group={','.join(str(g) for g in range(len(job.pools)))}" if het else \
        f"--nodes={total} --ntasks-per-node=1"
    if job.sandbox and job.network_helper and job.fabric:
        return _fabric(job, settings, total, rank, step, opts, prefix, redirect)
    return [
        "# several nodes: one task per node, with a torchrun-style rendezvous (the first node is the master)",
        *_node_lists(len(job.pools)),
        'export MASTER_ADDR="${nodes_0[0]}"',
        f"export MASTER_PORT={settings.master_port}",
        f"export NNODES={total}",
        f"export NPROC_PER_NODE={job.pools[0].gpus_per_node}",
        f"srun {step} {opts}{prefix}bash -c 'export NODE_RANK=\"${rank}\"; {ignore}exec \"$@\"{redirect}' starforge-node "
        f"{argv}",
    ]


def _fabric(job: SlurmJob, settings: SlurmSettings, total: int, rank: str, step: str, opts: str, prefix: str,
            redirect: str) -> list[str]:
    """Several sandboxed nodes: each node's helper joins its rank to the job fabric, where rank 0 is the master."""
    fabric = ("--fabric", job.fabric, "--ranks", str(total))
    # rank 0's exit record is the job's; every other rank writes its own next to it (the executor reads Slurm's exit
    # status for a rank that failed)
    own = (f'[ "$NODE_RANK" = 0 ] || export {EXIT_FILE_VARIABLE}="${{{EXIT_FILE_VARIABLE}%.json}}-rank$NODE_RANK.json"; '
           if EXIT_FILE_VARIABLE in job.env else "")
    node = (f'export NODE_RANK="${rank}"; {own}trap "" TERM; exec {_q(job.network_helper)} {_q(fabric)} '
            f'--rank "$NODE_RANK" -- "$@"{redirect}')
    inside = _q(node_command((), job.sandbox, job.argv))
    return [
        "# several sandboxed nodes: one task per node; the ranks meet on the job fabric (rank 0 is the master)",
        f"export MASTER_ADDR={address_of(0)}",
        f"export MASTER_PORT={settings.master_port}",
        f"export NNODES={total}",
        f"export NPROC_PER_NODE={job.pools[0].gpus_per_node}",
        f"export GLOO_SOCKET_IFNAME={FABRIC_IFNAME}",
        f"export NCCL_SOCKET_IFNAME={FABRIC_IFNAME}",
        f"srun {step} {opts}{prefix}bash -c {shlex.quote(node)} starforge-node {inside}",
    ]


def _ray(job: SlurmJob, settings: SlurmSettings, opts: str, prefix: str) -> list[str]:
    total = sum(p.nodes for p in job.pools)
    python = shlex.quote(job.python)
    ray = shlex.quote(posixpath.join(posixpath.dirname(job.python), "ray") if "/" in job.python else "ray")
    het = len(job.pools) > 1

    def group(g: int) -> str:
        return f"--het-group={g} " if het else ""

    check = ('import ray, sys; ray.init(address=sys.argv[1], logging_level="ERROR"); '
             'sys.exit(0 if sum(1 for n in ray.nodes() if n["Alive"]) >= int(sys.argv[2]) else 1)')
    lines = [
        "# Ray-on-Slurm: a Ray head on the first node, workers on the others, then the driver once",
        *_node_lists(len(job.pools)),
        'head_node="${nodes_0[0]}"',
        f'head_ip=$(srun {group(0)}--nodes=1 --ntasks=1 -w "$head_node" hostname --ip-address | awk \'{{print $1}}\')',
        f'export RAY_ADDRESS="$head_ip:{settings.ray_port}"',
        "wait_for_nodes() {  # wait_for_nodes COUNT: until COUNT Ray nodes are alive, or the deadline passes",
        f"  local deadline=$((SECONDS + {settings.ray_wait_seconds}))",
        f'  until srun {group(0)}--overlap --nodes=1 --ntasks=1 -w "$head_node" {opts}{prefix}{python} -c '
        f'{shlex.quote(check)} "$RAY_ADDRESS" "$1" >/dev/null 2>&1; do',
        "    if (( SECONDS >= deadline )); then",
        f'      echo "starforge: fewer than $1 Ray nodes joined within {settings.ray_wait_seconds}s" >&2',
        "      exit 1",
        "    fi",
        "    sleep 5",
        "  done",
        "}",
        f'srun {group(0)}--nodes=1 --ntasks=1 -w "$head_node" {opts}{prefix}{ray} start --head '
        f'--node-ip-address="$head_ip" --port={settings.ray_port} --block &',
        "wait_for_nodes 1",
    ]
    for g in range(len(job.pools)):
        rest = f"nodes_{g}[@]:1" if g == 0 else f"nodes_{g}[@]"  # every node but the head
        lines += [
            f'for node in "${{{rest}}}"; do',
            f'  srun {group(g)}--nodes=1 --ntasks=1 -w "$node" {opts}{prefix}{ray} start --address="$RAY_ADDRESS" '
            "--block &",
            "done",
        ]
    lines += [
        f"wait_for_nodes {total}",
        "# the driver; when it ends, the script ends and Slurm ends the Ray steps",
        f'srun {group(0)}--overlap --nodes=1 --ntasks=1 -w "$head_node" {opts}{prefix}{_q(job.argv)}',
    ]
    return lines


def render_batch(job: SlurmJob, settings: SlurmSettings) -> str:
    """Return the batch script of `job`; raise JobRefused when the job cannot be expressed for Slurm."""
    _check(job, settings)
    opts, prefix = _container(job, settings)
    lines = _header(job, settings)
    lines += [
        f"# StarForge run {_NAME.sub('-', job.run_id)}: written by the console, submitted with sbatch",
        "set -euo pipefail",
        *(f"export {name}={shlex.quote(value)}" for name, value in sorted(job.env.items())
          if name != INGEST_TOKEN_VARIABLE),
        *([f'export {INGEST_TOKEN_VARIABLE}="$(cat -- {shlex.quote(posixpath.join(job.run_dir, TOKEN_FILE))})"']
          if INGEST_TOKEN_VARIABLE in job.env else []),
        # sandboxed: bubblewrap enters the job's working folder; the script stays in the run folder
        f"cd -- {shlex.quote(job.run_dir if job.sandbox else job.cwd)}",
    ]
    lines += (_ray if job.uses_ray else _plain)(job, settings, opts, prefix)
    return "\n".join(lines) + "\n"
