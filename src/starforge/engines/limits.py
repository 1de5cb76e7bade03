"""Per-job resource limits on the local executor: cgroups v2 where delegated to us, rlimits and CPU affinity otherwise.

A job gets `slots × memory_per_slot` of memory and `slots × cpus_per_slot` CPUs.

- With a delegated cgroup v2 tree, each job has its own cgroup (`memory.max`, `cpu.max`, `pids.max`); the kernel
  enforces the limits and `memory.events` tells an out-of-memory kill from other deaths.
- Otherwise the job is pinned to its own CPU cores (affinity), its address space is capped at twice its memory
  (a backstop against sudden spikes), and the executor samples the resident memory of the job's processes: a job
  above its limit is killed and fails with the reason.
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CgroupV2", "JobLimits", "detect_cgroup", "machine_memory", "rlimit_command"]

PIDS_MAX = 4096  # processes per job: a fork bomb stops here


@dataclass(frozen=True)
class JobLimits:
    """The limits of one job: memory in bytes, CPUs (fractional with cgroups), cores it is pinned to, wall time."""

    memory_bytes: int | None = None
    cpus: float | None = None
    cores: tuple[int, ...] = ()
    wall_seconds: float | None = None

    def to_dict(self) -> dict[str, object]:
        """Return the JSON form kept in the run's executor record."""
        return {"memory_bytes": self.memory_bytes, "cpus": self.cpus, "cores": list(self.cores),
                "wall_seconds": self.wall_seconds}

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> JobLimits:
        """Read the executor record form back (unknown or malformed values mean no limit)."""
        memory, cpus, wall = data.get("memory_bytes"), data.get("cpus"), data.get("wall_seconds")
        cores = data.get("cores")
        return cls(
            memory if isinstance(memory, int) else None,
            float(cpus) if isinstance(cpus, int | float) else None,
            tuple(c for c in cores if isinstance(c, int)) if isinstance(cores, list) else (),
            float(wall) if isinstance(wall, int | float) else None,
        )


def machine_memory() -> int:
    """Return the machine's physical memory in bytes."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (OSError, ValueError):
        return 8 * 1024**3


def rlimit_command(limits: JobLimits, *, per_job_uid: bool) -> list[str]:
    """Return the `prlimit`/`taskset` prefix that applies the rlimit fallback to the job's processes."""
    args = ["prlimit", "--core=0"]
    if limits.memory_bytes:
        args.append(f"--as={2 * limits.memory_bytes}")
    if per_job_uid:
        args.append(f"--nproc={PIDS_MAX}")  # counted per uid: only meaningful when the uid is the job's own
    args.append("--")
    if limits.cores:
        args += ["taskset", "--cpu-list", ",".join(str(c) for c in limits.cores)]
    return args


class CgroupV2:
    """Per-job cgroups under a cgroup v2 directory whose memory, cpu and pids controllers are delegated to us."""

    def __init__(self, parent: Path) -> None:
        self.parent = parent

    def create(self, run_id: str, limits: JobLimits) -> Path:
        """Create the job's cgroup with its limits and return its path."""
        path = self.parent / f"job-{run_id}"
        path.mkdir(exist_ok=True)
        if limits.memory_bytes:
            (path / "memory.max").write_text(f"{limits.memory_bytes}\n")
            with contextlib.suppress(OSError):
                (path / "memory.swap.max").write_text("0\n")
        if limits.cpus:
            period = 100_000
            (path / "cpu.max").write_text(f"{max(1000, math.ceil(limits.cpus * period))} {period}\n")
        with contextlib.suppress(OSError):
            (path / "pids.max").write_text(f"{PIDS_MAX}\n")
        return path

    @staticmethod
    def enter_command(path: Path) -> list[str]:
        """Return a prefix that moves the started process into `path` before it runs anything else."""
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(path)]

    @staticmethod
    def oom_killed(path: Path) -> bool:
        """Return True when the kernel killed a process of this cgroup for exceeding `memory.max`."""
        try:
            text = (path / "memory.events").read_text()
        except OSError:
            return False
        counts = dict(line.split() for line in text.splitlines() if len(line.split()) == 2)
        return int(counts.get("oom_kill", "0")) > 0

    @staticmethod
    def remove(path: Path) -> None:
        """Remove an emptied job cgroup (ignored while processes remain)."""
        with contextlib.suppress(OSError):
            path.rmdir()


def _own_cgroup() -> Path | None:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return Path("/sys/fs/cgroup") / line[3:].lstrip("/")
    except OSError:
        return None
    return None


def detect_cgroup(setting: str) -> tuple[CgroupV2 | None, str]:
    """Return the job cgroup parent to use (`auto`, `off` or a delegated path) or None with the reason why not."""
    if setting == "off":
        return None, "cgroups are off in the configuration"
    if not Path("/sys/fs/cgroup/cgroup.controllers").is_file():
        return None, "/sys/fs/cgroup is not a cgroup v2 (unified) hierarchy"
    base = Path(setting) if setting != "auto" else _own_cgroup()
    if base is None or not base.is_dir():
        return None, "this process's cgroup v2 directory was not found"
    try:
        available = set((base / "cgroup.controllers").read_text().split())
    except OSError as exc:
        return None, f"cannot read {base}/cgroup.controllers: {exc}"
    missing = {"memory", "cpu"} - available
    if missing:
        return None, f"the {', '.join(sorted(missing))} controller(s) are not delegated to {base}"
    if not os.access(base, os.W_OK):
        return None, f"{base} is not writable by this process (delegate it, e.g. systemd Delegate=yes)"
    try:
        if setting == "auto":  # a cgroup with processes cannot enable controllers for children: move ourselves
            leaf = base / "console"
            leaf.mkdir(exist_ok=True)
            (leaf / "cgroup.procs").write_text(f"{os.getpid()}\n")
        (base / "cgroup.subtree_control").write_text("+memory +cpu\n")
        if "pids" in available:
            (base / "cgroup.subtree_control").write_text("+pids\n")
    except OSError as exc:
        return None, f"cannot enable the memory and cpu controllers under {base}: {exc}"
    return CgroupV2(base), ""
