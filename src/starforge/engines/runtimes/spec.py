"""What a runtime is made of (`RuntimeSpec`), and how a job starts on a built one (`JobRuntime`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CPU", "GPU", "KINDS", "JobRuntime", "RuntimeSpec"]

CPU, GPU = "cpu", "gpu"
KINDS = (CPU, GPU)


@dataclass(frozen=True)
class RuntimeSpec:
    """One runtime to build: its id, Python, series kind, requirements and how torch is chosen on CPU series.

    The cache keeps one venv per spec, named `<runtime_id>-py<python>-<kind>-<digest>`; the digest covers the
    requirements and the install options, so changing them builds a new venv beside the old one.
    """

    runtime_id: str
    kind: str
    python: str
    requirements: tuple[str, ...]
    constraints: tuple[str, ...] = ()  # e.g. `torch==2.13.0+cpu` on a CPU series
    extra_index_urls: tuple[str, ...] = ()  # e.g. PyTorch's CPU index when no local wheel has the CPU build
    cpu_check: str = ""  # "" | "cpu-build" (torch must resolve to a CPU build) | "no-torch" (torch is refused)

    @property
    def digest(self) -> str:
        """Return 12 hex characters identifying the requirements and install options."""
        body = json.dumps([sorted(self.requirements), sorted(self.constraints), list(self.extra_index_urls),
                           self.cpu_check])
        return hashlib.sha256(body.encode()).hexdigest()[:12]

    @property
    def dirname(self) -> str:
        """Return the folder name of this runtime in the cache."""
        return f"{self.runtime_id}-py{self.python}-{self.kind}-{self.digest}"

    @property
    def label(self) -> str:
        """Return a readable name: `trl-1.10.0 (python 3.11, cpu)`."""
        return f"{self.runtime_id} (python {self.python}, {self.kind})"


@dataclass(frozen=True)
class JobRuntime:
    """How a job starts on a built runtime: its interpreter, the StarForge copy it imports, what it must see."""

    venv: Path
    python: str  # the runtime's interpreter: `forge-launch` runs on it, and `{python}` of the plan is it
    pythonpath: str  # the copy of the `starforge` package (runner, recipes' modules) the job imports
    paths: tuple[Path, ...]  # read-only where they are: the venv, the StarForge copy, the base interpreter
    label: str = ""
