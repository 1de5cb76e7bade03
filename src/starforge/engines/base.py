"""The executor seam: every engine (local processes, Slurm, Ray) implements these five operations.

    submit(request) -> ref         start a job; the ref survives a console restart (it is stored on the job row)
    poll(ref) -> ExecState         running, or exited with an exit code / signal, or lost (vanished without a trace)
    poll_many(refs) -> {ref: ExecState}          the same for every running job at once (one engine query)
    logs(ref, offset) -> (bytes, next offset)   output produced since `offset`
    stop(ref, grace)               SIGTERM (or the engine's equivalent), then a hard kill after `grace` seconds
    reconcile(refs) -> {ref: ExecState}         after a restart: re-attach what still runs, account for the rest

Besides, `job_paths(run_dir)` says where a run's folders appear to the job (inside a sandbox they are not where
the console keeps them), so that the launch plan and the job environment name paths the job can actually use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..wire import ref_parts  # the stored ref's format is the wire's: the console's job views read it too

__all__ = ["ExecState", "Executor", "ExecutorError", "JobPaths", "JobRefused", "LaunchRequest", "Limits", "Mount",
           "PoolShape", "ref_parts"]


class ExecutorError(RuntimeError):
    """Raised when an engine cannot start a job (the scheduler undoes the placement and requeues it)."""


class JobRefused(ExecutorError):
    """Raised when a job can never start as requested (the scheduler fails it with this reason)."""


@dataclass(frozen=True)
class Mount:
    """A read-only input shown to the job: a directory or file of this machine at a path the job sees.

    With `within`, the source must still lie inside that folder when the job starts (symbolic links resolved,
    checked on the opened file itself): inputs taken from another run's writable folder can never point elsewhere.
    """

    source: Path
    target: str
    within: Path | None = None


@dataclass(frozen=True)
class Limits:
    """Limits the console sets on a job besides what the executor derives from its slots (None: no limit)."""

    wall_seconds: float | None = None


@dataclass(frozen=True)
class JobPaths:
    """Where a run's folders appear to the job: its storage root, run folder, work, out, logs and inputs."""

    storage_root: str
    run_dir: str
    inputs: str | None  # where read-only inputs are mounted; None: the job reads them where they are
    home: str | None = None  # HOME and TMPDIR inside a sandbox; None: the console's own
    tmp: str | None = None
    caches: str | None = None  # where writable caches (the account's hub cache) are mounted; None: where they are

    @property
    def work(self) -> str:
        """Return the unpacked bundle's folder (the job's working directory)."""
        return f"{self.run_dir}/work"

    @property
    def out(self) -> str:
        """Return the job's output folder."""
        return f"{self.run_dir}/out"

    @property
    def logs(self) -> str:
        """Return the job's log folder."""
        return f"{self.run_dir}/logs"

    def place(self, name: str, source: Path, within: Path | None = None) -> Mount:
        """Return the mount that shows `source` to the job as input `name`."""
        return Mount(source, f"{self.inputs}/{name}" if self.inputs else str(source), within)

    def place_cache(self, name: str, source: Path) -> Mount:
        """Return the mount that shows the writable cache folder `source` to the job as cache `name`."""
        return Mount(source, f"{self.caches}/{name}" if self.caches else str(source))


@dataclass(frozen=True)
class PoolShape:
    """One resource pool of the admitted spec: `nodes` nodes of `series`, `per_node` slots (GPUs or CPUs) on each."""

    series: str
    nodes: int
    per_node: int


@dataclass(frozen=True)
class LaunchRequest:
    """What to start: the run, its directory, the command, its environment and the devices it may use.

    `run_dir` is the console's path of the run; `argv`, `env` and `cwd` use the paths of `Executor.job_paths`.
    `runtime` names the folders of the job's runtime (a built venv, the StarForge copy it imports, its base
    interpreter), shown read-only where they are; `caches` are writable folders of the job's account (its hub
    cache), shown read-write; `owner` is the account, so its jobs share one identity on a root console.
    """

    run_id: str
    run_dir: Path
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    devices: dict[str, int] = field(default_factory=dict)  # accelerators (or CPU slots) requested per series
    mounts: tuple[Mount, ...] = ()
    limits: Limits = field(default_factory=Limits)
    owner: str = ""
    runtime: tuple[Path, ...] = ()
    caches: tuple[Mount, ...] = ()
    pools: tuple[PoolShape, ...] = ()  # the admitted shape, pool by pool (cluster engines place nodes from it)
    image: str = ""  # spec.framework.image: the image the job runs in ("" for the machine's system)
    image_root: Path | None = None  # that image unpacked (its root filesystem, where every node sees it)
    image_digest: str = ""  # the digest the job runs on (a tag that moves never changes a started job)
    framework: str = ""  # the recipe's framework (cluster engines start a Ray world for the Ray-based ones)


@dataclass(frozen=True)
class ExecState:
    """The state of a started job as the engine sees it."""

    state: str  # pending (the engine queues it; `detail` says why) | running | exited | lost
    exit_code: int | None = None
    signal: int | None = None
    detail: str = ""
    reason: str = ""  # set when the engine ended the job itself (a limit was exceeded): the job's failure reason

    @property
    def finished(self) -> bool:
        """Return True when the job no longer runs (nor waits to)."""
        return self.state not in ("running", "pending")


class Executor(Protocol):
    """An engine that runs jobs; the conformance suite in tests/ runs against every implementation."""

    name: str

    def capacity(self) -> dict[str, int]:
        """Return the slots per accelerator series this engine offers."""
        ...

    def job_paths(self, run_dir: Path) -> JobPaths:
        """Return where the folders of the run kept at `run_dir` appear to its job."""
        ...

    def submit(self, request: LaunchRequest) -> str:
        """Start a job and return its durable reference."""
        ...

    def poll(self, ref: str) -> ExecState:
        """Return the current state of a started job."""
        ...

    def poll_many(self, refs: list[str]) -> dict[str, ExecState]:
        """Return the current state of every started job in `refs` (the scheduler's cycle asks once for all)."""
        ...

    def logs(self, ref: str, offset: int) -> tuple[bytes, int]:
        """Return the output produced since `offset` and the offset to continue from."""
        ...

    def stop(self, ref: str, grace: float) -> None:
        """Ask the job to stop; kill it if it is still alive after `grace` seconds."""
        ...

    def reconcile(self, refs: list[str]) -> dict[str, ExecState]:
        """Re-attach jobs after a restart and return the state of each ref."""
        ...
