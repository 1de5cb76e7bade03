"""The job sandbox: a bubblewrap command line under which a job sees the system read-only and only its own run.

Inside, the job has its own PID, IPC and UTS namespaces (and its network namespace, see `jobnet`), a private /tmp (the run's `tmp/` folder), a minimal /dev
holding only its assigned GPU device nodes, and this filesystem view:

    /usr /etc /bin /lib* /sbin      the system, read-only
    <runtime paths>                  the interpreter, its environment and import path, read-only, where they are
    /forge/runs/<user>/<exp>/<run>/  its own work, out and logs folders, read-write
    /forge/inputs/<name>             its inputs (corpus, datasets, init_from checkpoint), read-only
    /forge/console/                  the job channel (its console's ingest socket), read-only, with its own network
    <framework checkouts>            read-only, where they are

The console's state folder, database, bundles and other runs are never mounted. A console running as root starts
the job as a per-job uid of the configured range (bubblewrap mounts as root, then `setpriv` drops every privilege);
otherwise the job runs in a user namespace of the console's own user. The arguments reach bubblewrap through a
file descriptor (`--args`), so not even the console's paths are visible in the job's /proc/1/cmdline.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .image_view import host_setpriv, image_root_args

__all__ = [
    "GPU_CONTROL_NODES",
    "SANDBOX_ROOT",
    "SYSTEM_DIRS",
    "SandboxUnavailable",
    "View",
    "bwrap_command",
    "find_bwrap",
    "gpu_device_nodes",
    "runtime_paths",
    "supports",
    "system_args",
]

SANDBOX_ROOT = "/forge"
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
GPU_CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")


class SandboxUnavailable(RuntimeError):
    """Raised when jobs cannot be sandboxed on this machine; `fix` says what the operator can do."""

    def __init__(self, message: str, fix: str) -> None:
        self.fix = fix
        super().__init__(message)


@dataclass(frozen=True)
class View:
    """What one job sees besides the system: read-write folders, read-only paths, devices, and where it starts."""

    cwd: str
    rw: tuple[tuple[Path, str], ...] = ()
    ro: tuple[tuple[Path, str], ...] = ()
    ro_fds: tuple[tuple[int, str], ...] = ()  # already opened (and checked) inputs: (file descriptor, job path)
    masked: tuple[str, ...] = ()  # files inside read-only paths the job must not read (replaced by an empty file)
    devices: tuple[str, ...] = ()
    tmp: Path | None = None  # bound at /tmp (private); a fresh tmpfs when None
    own_network: bool = False  # a network namespace of its own (`jobnet`); False: the machine's network
    extra: tuple[str, ...] = field(default=())  # further bubblewrap options (tests, future engines)
    root: Path | None = None  # an unpacked image shown as `/` instead of the machine's system folders


def system_args(root: Path = Path("/")) -> list[str]:
    """Return the bubblewrap options that show the system folders read-only (symlinks stay symlinks)."""
    args: list[str] = []
    for name in SYSTEM_DIRS:
        path = root / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    return args


def _covered(path: Path, by: Iterable[Path]) -> bool:
    return any(path == other or path.is_relative_to(other) for other in by)


def runtime_paths() -> list[Path]:
    """Return the folders this interpreter needs to run the job runner: prefixes and import path, outermost only."""
    candidates = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent]
    for index, entry in enumerate(sys.path):
        if index == 0 and (not entry or os.path.abspath(entry) == os.getcwd()):
            continue  # `python -m`/`-c` puts the working directory first: never show a job where the console ran
        if entry:
            path = Path(entry)
            candidates.append(path if os.path.isdir(path) else path.parent)
    system = [Path("/") / name for name in SYSTEM_DIRS]
    existing = sorted({p.resolve() for p in candidates if os.path.exists(p)}, key=lambda p: len(p.parts))
    out: list[Path] = []
    for path in existing:
        if not _covered(path, system) and not _covered(path, out):
            out.append(path)
    return out


def gpu_device_nodes(indices: Sequence[int]) -> tuple[str, ...]:
    """Return the device nodes a job with these NVIDIA GPU indices may open (its cards and the control nodes)."""
    nodes = [f"/dev/nvidia{i}" for i in indices]
    return tuple(nodes + [n for n in GPU_CONTROL_NODES if Path(n).exists()]) if indices else ()


def _parents(target: str, made: set[str], system: bool = True) -> list[str]:
    args: list[str] = []
    current = ""
    for part in Path(target).parts[1:-1]:
        current = f"{current}/{part}"
        if current not in made and not (system and any(current.startswith(f"/{name}/") for name in SYSTEM_DIRS)):
            made.add(current)
            args += ["--perms", "0755", "--dir", current]
    return args


def bwrap_command(
    view: View, command: Sequence[str], *, uid: int | None, disable_userns: bool = False
) -> tuple[list[str], list[str]]:
    """Return bubblewrap's options (for `--args`, they name the console's paths) and the command to run in `view`.

    With `uid`, bubblewrap runs as root and `setpriv` becomes `uid` with no capabilities and no way to gain any;
    without, the job runs in a new user namespace of the calling user.
    """
    args = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "job"]
    if view.own_network:
        args += ["--unshare-net"]
    if uid is None:
        args += ["--unshare-user", "--cap-drop", "ALL"]
        if disable_userns:
            args += ["--disable-userns"]
    ro, setpriv = view.ro, ("setpriv",)
    if view.root is not None:
        if uid is not None:  # the machine's setpriv, with its loader: an image need not have one
            tools, setpriv = host_setpriv()
            ro = (*ro, *tools)
        targets = [t for _s, t in (*ro, *view.rw)] + [t for _fd, t in view.ro_fds] + list(view.masked)
        root_args, made = image_root_args(view.root, [*targets, view.cwd + "/"])
        args += root_args
        made |= {"/tmp", "/dev", "/proc"}
    else:
        args += system_args()
        made = {"/tmp", "/dev", "/proc", *(f"/{name}" for name in SYSTEM_DIRS)}
    args += ["--proc", "/proc", "--dev", "/dev"]
    for node in view.devices:
        args += ["--dev-bind", node, node]
    args += ["--bind", str(view.tmp), "/tmp"] if view.tmp is not None else ["--tmpfs", "/tmp"]
    system = view.root is None
    for source, target in ro:
        args += _parents(target, made, system) + ["--ro-bind", str(source), target]
        made.add(target)
    for fd, target in view.ro_fds:
        args += _parents(target, made, system) + ["--ro-bind-fd", str(fd), target]
        made.add(target)
    for target in view.masked:
        args += ["--ro-bind", "/dev/null", target]
    for source, target in view.rw:
        args += _parents(target, made, system) + ["--bind", str(source), target]
        made.add(target)
    args += [*view.extra, "--chdir", view.cwd]
    drop: list[str] = []
    if uid is not None:
        drop = [*setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs", "--"]
    return args, drop + list(command)


def find_bwrap() -> str:
    """Return the path of bubblewrap, or raise SandboxUnavailable saying how to install it."""
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed, so jobs cannot be sandboxed",
            "install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora/RHEL: dnf install bubblewrap), or set "
            "`executors: {local: {sandbox: off}}` in the console configuration on a single-user machine only",
        )
    return found


def supports(bwrap: str, option: str) -> bool:
    """Return True when this bubblewrap knows `option` (read from its --help)."""
    try:
        text = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return option in text
