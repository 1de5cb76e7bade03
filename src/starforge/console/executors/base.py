"""The executor seam: every engine (local processes, Slurm, Ray) implements these five operations.

    submit(request) -> ref         start a job; the ref survives a console restart (it is stored on the job row)
    poll(ref) -> ExecState         running, or exited with an exit code / signal, or lost (vanished without a trace)
    logs(ref, offset) -> (bytes, next offset)   output produced since `offset`
    stop(ref, grace)               SIGTERM (or the engine's equivalent), then a hard kill after `grace` seconds
    reconcile(refs) -> {ref: ExecState}         after a restart: re-attach what still runs, account for the rest
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

__all__ = ["ExecState", "Executor", "ExecutorError", "LaunchRequest"]


class ExecutorError(RuntimeError):
    """Raised when an engine cannot start a job (the scheduler undoes the placement and requeues it)."""


@dataclass(frozen=True)
class LaunchRequest:
    """What to start: the run, its directory, the command, its environment and the devices it may use."""

    run_id: str
    run_dir: Path
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: Path
    devices: dict[str, int] = field(default_factory=dict)  # accelerators requested per series


@dataclass(frozen=True)
class ExecState:
    """The state of a started job as the engine sees it."""

    state: str  # running | exited | lost
    exit_code: int | None = None
    signal: int | None = None
    detail: str = ""

    @property
    def finished(self) -> bool:
        """Return True when the job no longer runs."""
        return self.state != "running"


class Executor(Protocol):
    """An engine that runs jobs; the conformance suite in tests/ runs against every implementation."""

    name: str

    def capacity(self) -> dict[str, int]:
        """Return the slots per accelerator series this engine offers."""
        ...

    def submit(self, request: LaunchRequest) -> str:
        """Start a job and return its durable reference."""
        ...

    def poll(self, ref: str) -> ExecState:
        """Return the current state of a started job."""
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
