"""The job sandbox on cluster nodes, shared by the Slurm and Ray executors: one job's view, its uid and its command.

`NodeSandbox.prepare` writes bubblewrap's options for a run to `<run>/sandbox.args` (mode 0600, never shown to the
job) and returns the command the job runs inside; `node_command` is what each node runs around it: the node's
network helper (`jobnet_node`: the job's own network namespace and its channel to the console), bubblewrap reading
its options from descriptor 9 (`9<<run>/sandbox.args`, opened by whoever starts it on the node), then
`env --default-signal=TERM`, so that the helper and bubblewrap may ignore SIGTERM (an engine signals every process of
the job) while the job itself gets its default action back and decides how it stops. A root console runs each job
as its account's uid from the pool: the uid is recorded in the run folder (`record` names the file), so a restarted
console holds it again, and `settle` releases it (the run's folders become the console's again) once the engine says
the job ended. The nodes must see the runtime, the run folders and bubblewrap where this machine does.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from .base import ExecState, ExecutorError, JobPaths, JobRefused, LaunchRequest, Mount
from .identities import DEFAULT_RANGE, UidPool, give_to_job, reclaim_tree
from .isolation import Isolation
from .run_log import write_private
from .sandbox import GPU_CONTROL_NODES

__all__ = ["ARGS_FD", "FABRIC_FOLDER", "NODE_HELPER", "SANDBOX_ARGS_FILE", "NodeSandbox", "console_side", "submitting",
           "fabric_folder", "node_command"]

SANDBOX_ARGS_FILE = "sandbox.args"  # in the run folder, mode 0600: bubblewrap's options, NUL-separated
ARGS_FD = 9  # the descriptor bubblewrap reads its options from (`--args 9`), opened on the node
NODE_HELPER = "starforge.engines.jobnet_node"  # run on each node around bubblewrap (its network, channel)
FABRIC_FOLDER = "fabric"  # in the run folder, mode 0700: where a multi-node job's helpers meet (`engines.fabric`)
_NO_STATE = Path("/nonexistent/starforge-state")  # the state folder of an executor not told its own (tests)


def node_command(helper: tuple[str, ...], bwrap: str, inside: Iterable[str]) -> list[str]:
    """Return what a node runs for a sandboxed job: `helper -- bwrap --args 9 -- env --default-signal=TERM inside`.

    Without a helper (`()`), bubblewrap starts first. Descriptor `ARGS_FD` must name `<run>/sandbox.args`.
    """
    wrapped = [bwrap, "--args", str(ARGS_FD), "--", "env", "--default-signal=TERM", *inside]
    return [*helper, "--", *wrapped] if helper else wrapped


def fabric_folder(run_dir: Path) -> Path:
    """Return the run's fabric folder, made empty with mode 0700: the nodes' helpers meet there, the job never does
    (a previous attempt's rank 0 address is gone)."""
    folder = run_dir / FABRIC_FOLDER
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(mode=0o700)
    folder.chmod(0o700)  # whatever the umask
    return folder


class NodeSandbox:
    """The job sandbox of one cluster executor: its isolation, the uid pool (a root console), the held uids.

    `record` is the run folder's file that keeps a job's uid (`slurm-sandbox.json`, `ray-sandbox.json`).
    """

    def __init__(self, storage_root: Path | None, uids: UidPool | None, network: str, *, record: str) -> None:
        if uids is None and os.getuid() == 0:
            uids = UidPool(*DEFAULT_RANGE)
        self.isolation = Isolation.for_nodes(storage_root or _NO_STATE, uids if os.getuid() == 0 else None, network)
        self.network = network
        self.record = record
        self._held: set[Path] = set()  # run folders whose uid this executor holds in the pool
        self._lock = threading.Lock()

    @property
    def bwrap(self) -> str:
        """Return bubblewrap's path (as the nodes see it)."""
        return self.isolation.bwrap

    @property
    def uids(self) -> UidPool | None:
        """Return the uid pool (None: jobs run in a user namespace of the engine's user)."""
        return self.isolation.uids

    def job_paths(self, run_dir: Path) -> JobPaths:
        """Return where the job sees its run: under /forge."""
        return self.isolation.job_paths(run_dir)

    def helper(self, console: str, *, image: bool, python: str = "") -> tuple[str, ...]:
        """Return the node helper's command (before its `--`): the job's network and its channel to `console`."""
        return (python or sys.executable, "-I", "-m", NODE_HELPER, "--network", self.network, "--console", console,
                *(["--image"] if image else []))

    def take(self, owner: str) -> int | None:
        """Return a uid for a job of `owner` (None without a pool); `abandon` or `settle` gives it back."""
        return self.uids.take(owner) if self.uids is not None else None

    def prepare(self, request: LaunchRequest, uid: int | None, *, gpus_per_node: int = 0) -> list[str]:
        """Prepare the run's folders for `uid`, write bubblewrap's options to the run folder; return the inside argv.

        With `gpus_per_node`, the node's NVIDIA device nodes are shown (the engine's cgroup decides which open).
        """
        run_dir = request.run_dir
        tmp = run_dir / "tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        if uid is not None:
            give_to_job(run_dir, (m.source for m in request.caches), uid)
        paths = self.isolation.job_paths(run_dir)
        inputs = tuple((_resolved_within(m), m.target) for m in request.mounts)
        caches = tuple((m.source, m.target) for m in request.caches)
        view = self.isolation.view(run_dir, paths, request.cwd, inputs, (), (), request.runtime, caches,
                                   root=request.image_root)
        # the job dies with bubblewrap's parent, the node helper: a helper its engine killed leaves nothing running
        view = replace(view, extra=("--die-with-parent", *_gpu_binds(gpus_per_node)))
        options, inside = self.isolation.arguments(view, list(request.argv), uid=uid)
        write_private(run_dir / SANDBOX_ARGS_FILE, "".join(f"{o}\0" for o in options), 0o600)
        return inside

    def started(self, run_dir: Path, uid: int | None, owner: str) -> None:
        """Record the uid of a job handed to its engine (in the run folder) and hold it."""
        if uid is None:
            return
        self._write(run_dir, {"uid": uid, "owner": owner, "released": False})
        with self._lock:
            self._held.add(run_dir)

    def abandon(self, run_dir: Path, uid: int | None) -> None:
        """Give back the uid of a job its engine never took, and the run's folders to the console."""
        if uid is None or self.uids is None:
            return
        self.uids.release(uid)
        with self._lock:
            self._held.discard(run_dir)
        (run_dir / self.record).unlink(missing_ok=True)
        for name in ("work", "out", "logs"):
            reclaim_tree(run_dir / name)

    def settle(self, run_dir: Path, state: ExecState) -> None:
        """Hold the uid of a sandboxed job that runs (after a restart too); release it once the job has ended."""
        if self.uids is None:
            return
        try:
            record = json.loads((run_dir / self.record).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        uid = record.get("uid") if isinstance(record, dict) else None
        if not isinstance(uid, int) or record.get("released"):
            return
        pool = self.uids
        with self._lock:
            held = run_dir in self._held
            if not state.finished:
                if not held:
                    pool.hold(uid, str(record.get("owner") or ""))
                    self._held.add(run_dir)
                return
            self._held.discard(run_dir)
        for name in ("work", "out", "logs"):
            reclaim_tree(run_dir / name)
        shutil.rmtree(run_dir / "tmp", ignore_errors=True)
        self._write(run_dir, {**record, "released": True})
        if held:
            pool.release(uid)

    def _write(self, run_dir: Path, record: dict[str, object]) -> None:
        tmp = run_dir / (self.record + ".tmp")
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, run_dir / self.record)


@contextlib.contextmanager
def submitting(box: NodeSandbox | None, run_dir: Path, uid: int | None) -> Iterator[None]:
    """Hand a job to its engine: a failure gives back what the submission took (its uid, its folders) and is an
    ExecutorError (a refusal stays a JobRefused)."""
    try:
        yield
    except (OSError, RuntimeError) as exc:
        if box is not None:
            box.abandon(run_dir, uid)
        if isinstance(exc, ExecutorError):
            raise
        raise ExecutorError(f"cannot submit the job: {exc}") from exc


def console_side(request: LaunchRequest, paths: JobPaths, storage_root: Path | None) -> LaunchRequest:
    """Return `request` with the sandbox paths it names (/forge/…) replaced by the console's own (an unsandboxed job)."""
    pairs = [(paths.run_dir, str(request.run_dir)),
             *((m.target, str(m.source)) for m in (*request.mounts, *request.caches))]
    if storage_root is not None:
        pairs.append((paths.storage_root, str(storage_root)))
    pairs.sort(key=lambda pair: len(pair[0]), reverse=True)
    pattern = re.compile("|".join(f"{re.escape(job)}(?=/|$|[^A-Za-z0-9_.-])" for job, _ in pairs))
    console = dict(pairs)

    def host(text: str) -> str:
        return pattern.sub(lambda match: console[match.group(0)], text)

    return replace(request, argv=tuple(host(a) for a in request.argv), cwd=host(request.cwd),
                   env={k: host(v) for k, v in request.env.items()},
                   mounts=tuple(Mount(m.source, str(m.source), m.within) for m in request.mounts),
                   caches=tuple(Mount(m.source, str(m.source)) for m in request.caches))


def _resolved_within(mount: Mount) -> Path:
    """Return the input's source with links resolved, refused unless it lies inside `mount.within`.

    Nodes cannot receive an opened descriptor: what the path names may still change between this check and the
    job's start (a job of the producing run, still running, could swap a folder for a link); see docs/engines.md.
    """
    real = Path(os.path.realpath(mount.source))
    if not real.exists():
        raise JobRefused(f"the input {mount.target} cannot be found")
    if mount.within is not None:
        root = Path(os.path.realpath(mount.within))
        if real != root and not real.is_relative_to(root):
            raise JobRefused(f"the input {mount.target} no longer lies inside the run folder it was registered in")
    return real


def _gpu_binds(per_node: int) -> tuple[str, ...]:
    """Return bubblewrap options showing a node's NVIDIA nodes when present (the engine's cgroup decides which open)."""
    if not per_node:
        return ()
    nodes = (*GPU_CONTROL_NODES, *(f"/dev/nvidia{i}" for i in range(max(per_node, 8))))
    return tuple(word for node in nodes for word in ("--dev-bind-try", node, node))
