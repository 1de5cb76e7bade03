"""The local executor: each job is a sandboxed process tree on this machine, its output in `<run>/logs/output.log`.

A ref is `local:<pid>:<start ticks>:<run dir>`, where pid is the process the console started (bubblewrap, or the
runner itself without a sandbox); the start time (from /proc) tells our job from a later process that reuses the
pid. The console's own record of a job (`<run>/executor.json`: its uid, limits and start time; the run folder itself
is never shown to the job) survives restarts. Children started by this console are reaped with `Popen.poll`; jobs
re-attached after a restart are watched through /proc, and their exit status is read from `<run>/logs/exit.json`,
which `forge-launch` writes. A job over its memory or wall-time limit is ended here and fails with the reason.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from ..contract import INGEST_ENDPOINT_VARIABLE
from ..wire import EXIT_FILE_VARIABLE, channel_endpoint, read_exit_record
from ._proc import ProcessTable, start_ticks
from .base import ExecState, ExecutorError, JobPaths, JobRefused, LaunchRequest, Mount
from .identities import give_to_job, reclaim_tree
from .isolation import Isolation, SpawnPlan
from .jobnet import NetworkUnavailable
from .limits import CgroupV2, JobLimits, rlimit_command
from .run_log import EXIT_FILE, OUTPUT, open_log, read_log
from .sandbox import gpu_device_nodes

__all__ = ["LocalExecutor", "detect_gpus"]

RECORD = "executor.json"
_CHECK_EVERY = 1.0  # seconds between two memory samples of one job


def detect_gpus() -> dict[str, list[int]]:
    """Return GPU indices per series found by `nvidia-smi` (series = the card model, e.g. `h200`), or {}."""
    if shutil.which("nvidia-smi") is None:
        return {}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    series: dict[str, list[int]] = {}
    for line in out.splitlines():
        index, _, name = line.partition(",")
        if index.strip().isdigit() and name.strip():
            model = name.strip().split()[-1].lower()
            series.setdefault(model, []).append(int(index))
    return series


def _open_within(mount: Mount) -> int:
    """Open an input as a path descriptor and return it only if the opened file lies inside `mount.within`."""
    assert mount.within is not None
    try:
        fd = os.open(mount.source, os.O_PATH | os.O_CLOEXEC)
    except OSError as exc:
        raise JobRefused(f"the input {mount.target} cannot be opened: {exc.strerror}") from exc
    real = os.readlink(f"/proc/self/fd/{fd}")
    root = os.path.realpath(mount.within)
    if real != root and not real.startswith(root + os.sep):
        os.close(fd)
        raise JobRefused(f"the input {mount.target} no longer lies inside the run folder it was registered in")
    return fd


def _parse_ref(ref: str) -> tuple[int, int, Path]:
    kind, pid, ticks, run_dir = ref.split(":", 3)
    if kind != "local":
        raise ValueError(f"not a local executor ref: {ref}")
    return int(pid), int(ticks), Path(run_dir)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit in ("B", "KiB") else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m" if hours else (f"{minutes}m {secs:02d}s" if minutes else f"{secs}s")


class _Job:
    """What this console knows about one started job (rebuilt from the run's record after a restart)."""

    def __init__(self, pid: int, ticks: int, run_dir: Path, record: dict[str, object]) -> None:
        self.pid, self.ticks, self.run_dir = pid, ticks, run_dir
        uid = record.get("uid")
        self.uid: int | None = uid if isinstance(uid, int) else None
        raw_limits = record.get("limits")
        self.limits = JobLimits.from_dict(raw_limits if isinstance(raw_limits, dict) else {})
        started = record.get("started_at")
        self.started_at = float(started) if isinstance(started, int | float) else time.time()
        cgroup = record.get("cgroup")
        self.cgroup = Path(cgroup) if isinstance(cgroup, str) and cgroup else None
        self.sandboxed = bool(record.get("sandboxed"))
        reason = record.get("reason")
        self.reason = reason if isinstance(reason, str) else ""
        owner = record.get("owner")
        self.owner = owner if isinstance(owner, str) else ""
        self.devices: dict[str, list[int]] = {}
        self.checked_at = 0.0
        self.finalised = False


class LocalExecutor:
    """Run jobs as local process trees, sandboxed by `isolation`; GPUs found by nvidia-smi are assigned per job."""

    name = "local"

    def __init__(self, capacity: dict[str, int], gpus: dict[str, list[int]] | None = None, *,
                 isolation: Isolation | None = None, stop_grace: float = 10.0) -> None:
        self._gpus = gpus if gpus is not None else detect_gpus()
        self._capacity = {**{s: len(ids) for s, ids in self._gpus.items()}, **capacity}
        self.isolation = isolation or Isolation.none()
        self.stop_grace = stop_grace
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._jobs: dict[int, _Job] = {}
        self._devices_in_use: dict[str, set[int]] = {}
        self._core_load: dict[int, int] = {}
        self._lock = threading.Lock()
        self._table: tuple[float, ProcessTable] | None = None
        self._stacks: list[subprocess.Popen[bytes] | None] = []  # jobs' network stacks, reaped once they end

    def capacity(self) -> dict[str, int]:
        """Return the slots per series: configured ones plus GPU series found on this machine."""
        return dict(self._capacity)

    def job_paths(self, run_dir: Path) -> JobPaths:
        """Return where the run's folders appear to its job (under /forge inside the sandbox)."""
        return self.isolation.job_paths(run_dir)

    # starting ------------------------------------------------------------------------------------------------
    def _assign_devices(self, request: LaunchRequest) -> dict[str, list[int]]:
        chosen: dict[str, list[int]] = {}
        with self._lock:
            for series, count in request.devices.items():
                if series not in self._gpus:
                    continue  # a CPU-slot series: nothing to assign
                free = [i for i in self._gpus[series] if i not in self._devices_in_use.get(series, set())]
                if len(free) < count:
                    raise ExecutorError(f"only {len(free)} free {series} GPUs on this machine, the job needs {count}")
                chosen[series] = free[:count]
                self._devices_in_use.setdefault(series, set()).update(chosen[series])
        return chosen

    def _assign_cores(self, cpus: float) -> tuple[int, ...]:
        if self.isolation.cgroup is not None:
            return ()
        available = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        if not available:
            return ()
        count = min(len(available), max(1, math.ceil(cpus - 1e-9)))
        with self._lock:
            chosen = sorted(sorted(available, key=lambda c: (self._core_load.get(c, 0), c))[:count])
            for core in chosen:
                self._core_load[core] = self._core_load.get(core, 0) + 1
        return tuple(chosen)

    def _release(self, job: _Job) -> None:
        with self._lock:
            for series, ids in job.devices.items():
                self._devices_in_use.get(series, set()).difference_update(ids)
            for core in job.limits.cores:
                self._core_load[core] = max(0, self._core_load.get(core, 0) - 1)
        if job.uid is not None and self.isolation.uids is not None:
            self.isolation.uids.release(job.uid)

    def submit(self, request: LaunchRequest) -> str:
        """Start the job in its own session (in its sandbox); its stdout and stderr go to `<run>/logs/output.log`."""
        run_dir = request.run_dir
        logs = run_dir / "logs"
        for name in ("work", "out", "logs"):
            (run_dir / name).mkdir(parents=True, exist_ok=True)
        (logs / EXIT_FILE).unlink(missing_ok=True)
        devices = self._assign_devices(request)
        slots = sum(request.devices.values()) or 1
        iso = self.isolation
        limits = iso.limits_for(slots, (), request.limits.wall_seconds)
        limits = JobLimits(limits.memory_bytes, limits.cpus, self._assign_cores(limits.cpus or 1), limits.wall_seconds)
        paths = iso.job_paths(run_dir)
        env = {**request.env, EXIT_FILE_VARIABLE: f"{paths.logs}/{EXIT_FILE}"}
        if iso.sandboxed and iso.network is not None and INGEST_ENDPOINT_VARIABLE in env:
            env[INGEST_ENDPOINT_VARIABLE] = channel_endpoint()  # its own network: the console only by its channel
        if devices:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for ids in devices.values() for i in ids)
        uid = None
        cgroup: Path | None = None
        record: dict[str, object] = {}
        args_fd: int | None = None
        input_fds: list[int] = []
        plan: SpawnPlan | None = None
        proc: subprocess.Popen[bytes] | None = None
        try:
            if iso.cgroup is not None:
                cgroup = iso.cgroup.create(request.run_id, limits)
                prefix = CgroupV2.enter_command(cgroup)
            else:
                prefix = rlimit_command(limits, per_job_uid=iso.uids is not None)
            if iso.sandboxed:
                uid = iso.uids.take(request.owner) if iso.uids is not None else None
                tmp = run_dir / "tmp"
                shutil.rmtree(tmp, ignore_errors=True)
                tmp.mkdir()
                if uid is not None:
                    give_to_job(run_dir, (m.source for m in request.caches), uid)
                gpu_nodes = gpu_device_nodes([i for ids in devices.values() for i in ids])
                plain = tuple((m.source, m.target) for m in request.mounts if m.within is None)
                for mount in request.mounts:
                    if mount.within is not None:
                        input_fds.append(_open_within(mount))
                pinned = tuple(zip(input_fds, [m.target for m in request.mounts if m.within is not None],
                                   strict=True))
                caches = tuple((m.source, m.target) for m in request.caches)
                view = iso.view(run_dir, paths, request.cwd, plain, gpu_nodes, pinned, request.runtime, caches,
                                root=request.image_root)
                plan = iso.spawn(view, list(request.argv), uid=uid, prefix=prefix)
                argv, args_fd, cwd, pass_fds = plan.argv, plan.args_fd, str(run_dir), plan.pass_fds
            else:
                if request.image_root is not None:
                    raise JobRefused(f"the job runs in the image {request.image}, which needs the job sandbox: this "
                                     "console runs jobs unsandboxed (executors.local.sandbox: off)")
                for mount in request.mounts:
                    if mount.within is not None:
                        os.close(_open_within(mount))
                argv, cwd, pass_fds = [*prefix, *request.argv], request.cwd, ()
            record = {"uid": uid, "limits": limits.to_dict(), "started_at": time.time(),
                      "cgroup": str(cgroup) if cgroup else "", "sandboxed": iso.sandboxed, "owner": request.owner}
            with os.fdopen(open_log(logs / OUTPUT, append=True), "ab") as out:  # never through a planted link
                proc = subprocess.Popen(
                    argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    start_new_session=True, close_fds=True, pass_fds=pass_fds,
                )
            if plan is not None:
                self._stacks.append(plan.attach_network(proc.pid))
        except (OSError, RuntimeError) as exc:
            if plan is not None and proc is None:
                plan.abandon()
            if proc is not None:
                with contextlib.suppress(OSError):
                    proc.wait(timeout=10)
            failed = _Job(0, 0, run_dir, record or {"uid": uid, "limits": limits.to_dict()})
            failed.devices = devices
            self._release(failed)
            if cgroup is not None:
                CgroupV2.remove(cgroup)
            if isinstance(exc, JobRefused):
                raise
            if isinstance(exc, NetworkUnavailable):
                raise JobRefused(f"the job's network cannot be set up: {exc}") from exc
            raise ExecutorError(f"cannot start {request.argv[0]}: {exc}") from exc
        finally:
            for fd in (*((args_fd,) if args_fd is not None else ()), *input_fds):
                os.close(fd)
        ticks = start_ticks(proc.pid) or 0
        job = _Job(proc.pid, ticks, run_dir, record)
        job.devices = devices
        self._write_record(job)
        with self._lock:
            self._children[proc.pid] = proc
            self._jobs[proc.pid] = job
        return f"local:{proc.pid}:{ticks}:{run_dir}"

    @staticmethod
    def _write_record(job: _Job) -> None:
        record = {"pid": job.pid, "ticks": job.ticks, "uid": job.uid, "limits": job.limits.to_dict(),
                  "started_at": job.started_at, "cgroup": str(job.cgroup) if job.cgroup else "",
                  "sandboxed": job.sandboxed, "reason": job.reason, "owner": job.owner}
        tmp = job.run_dir / (RECORD + ".tmp")
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, job.run_dir / RECORD)

    # watching ------------------------------------------------------------------------------------------------
    def _job(self, pid: int, ticks: int, run_dir: Path) -> _Job:
        with self._lock:
            job = self._jobs.get(pid)
        if job is not None and job.ticks == ticks:
            return job
        try:
            record = json.loads((run_dir / RECORD).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            record = {}
        job = _Job(pid, ticks, run_dir, record if isinstance(record, dict) else {})
        if job.uid is not None and self.isolation.uids is not None:
            self.isolation.uids.hold(job.uid, job.owner)
        with self._lock:
            self._jobs[pid] = job
        return job

    def _alive(self, pid: int, ticks: int) -> bool:
        return start_ticks(pid) == ticks

    def _processes(self) -> ProcessTable:
        now = time.monotonic()
        if self._table is None or now - self._table[0] > _CHECK_EVERY / 2:
            self._table = (now, ProcessTable())
        return self._table[1]

    def _enforce(self, job: _Job, ref: str) -> None:
        """End a running job that exceeds its wall time or (without cgroups) its memory; remember the reason."""
        if job.reason:
            return
        now = time.monotonic()
        if now - job.checked_at < _CHECK_EVERY:
            return
        job.checked_at = now
        limits = job.limits
        if limits.wall_seconds and time.time() - job.started_at > limits.wall_seconds:
            job.reason = (f"wall-time limit exceeded: the job ran {_duration(time.time() - job.started_at)}, "
                          f"its limit is {_duration(limits.wall_seconds)}")
            self._write_record(job)
            self.stop(ref, self.stop_grace)
            return
        if limits.memory_bytes and job.cgroup is None:
            used = self._processes().tree_rss(job.pid)
            if used > limits.memory_bytes:
                job.reason = (f"memory limit exceeded: the job used {_size(used)}, its limit is "
                              f"{_size(limits.memory_bytes)}")
                self._write_record(job)
                self._kill(job.pid)

    def poll_many(self, refs: list[str]) -> dict[str, ExecState]:
        """Return the state of each ref (each is one process of this machine)."""
        self._stacks = [stack for stack in self._stacks if stack is not None and stack.poll() is None]
        return {ref: self.poll(ref) for ref in refs}

    def poll(self, ref: str) -> ExecState:
        """Return running, exited (with the exit code or signal, and the reason when a limit ended it) or lost."""
        pid, ticks, run_dir = _parse_ref(ref)
        job = self._job(pid, ticks, run_dir)
        with self._lock:
            child = self._children.get(pid)
        if child is not None:
            code = child.poll()
            if code is None:
                self._enforce(job, ref)
                return ExecState("running")
            with self._lock:
                self._children.pop(pid, None)
            self._finalise(job)
            if code < 0:
                return ExecState("exited", exit_code=128 - code, signal=-code, reason=job.reason)
            return ExecState("exited", exit_code=code, reason=job.reason)
        if self._alive(pid, ticks):
            self._enforce(job, ref)
            return ExecState("running")
        self._finalise(job)
        state = self._from_exit_file(run_dir)
        return ExecState(state.state, state.exit_code, state.signal, state.detail, job.reason) if job.reason else state

    def _finalise(self, job: _Job) -> None:
        """Once a job's processes are gone: release its devices and uid, give its files back, drop its scratch."""
        if job.finalised:
            return
        job.finalised = True
        if job.cgroup is not None:
            if not job.reason and CgroupV2.oom_killed(job.cgroup):
                limit = job.limits.memory_bytes or 0
                job.reason = f"memory limit exceeded: the kernel ended the job at its limit of {_size(limit)}"
                self._write_record(job)
            CgroupV2.remove(job.cgroup)
        if job.sandboxed:
            if job.uid is not None:
                for name in ("work", "out", "logs"):
                    reclaim_tree(job.run_dir / name)
            shutil.rmtree(job.run_dir / "tmp", ignore_errors=True)
        self._release(job)
        with self._lock:
            self._jobs.pop(job.pid, None)

    def _from_exit_file(self, run_dir: Path) -> ExecState:
        record, problems = read_exit_record(run_dir / "logs" / EXIT_FILE)
        if record is not None:
            return ExecState("exited", exit_code=record.exit_code, signal=record.signal)
        if any(problem.code == "not_an_object" for problem in problems):
            return ExecState("lost", detail="the job's exit record is malformed")
        return ExecState("lost", detail="the job's process is gone and left no exit record (killed?)")

    def logs(self, ref: str, offset: int) -> tuple[bytes, int]:
        """Return the output written since `offset`."""
        _pid, _ticks, run_dir = _parse_ref(ref)
        return read_log(run_dir, offset)

    # stopping ------------------------------------------------------------------------------------------------
    def _job_top(self, pid: int) -> int | None:
        """Return the job's own first process inside the sandbox (below bubblewrap and its reaper)."""
        table = ProcessTable()
        for candidate in table.descendants(pid):
            if table.name(candidate) != "bwrap":
                return candidate
        return None

    def _kill(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # in the sandbox this takes the namespace's init, hence every process

    def stop(self, ref: str, grace: float) -> None:
        """Ask the job to stop (SIGTERM to the runner), then SIGKILL everything if it still runs after `grace` s."""
        pid, ticks, run_dir = _parse_ref(ref)
        if not self._alive(pid, ticks) and pid not in self._children:
            return
        job = self._job(pid, ticks, run_dir)
        target = self._job_top(pid) if job.sandboxed else None
        # without a sandbox, processes that left the job's group are found by parentage now, and killed at the end
        strays = [] if job.sandboxed else [(p, start_ticks(p)) for p in ProcessTable().descendants(pid)]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if target is not None:
                os.kill(target, signal.SIGTERM)
            else:
                os.killpg(pid, signal.SIGTERM)

        def escalate() -> None:
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and self._alive(pid, ticks):
                time.sleep(0.1)
            if self._alive(pid, ticks):
                self._kill(pid)
            for stray, stray_ticks in strays:
                if stray_ticks is not None and start_ticks(stray) == stray_ticks:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(stray, signal.SIGKILL)

        threading.Thread(target=escalate, name=f"stop-{pid}", daemon=True).start()

    def reconcile(self, refs: list[str]) -> dict[str, ExecState]:
        """Return the state of each ref after a restart: live jobs stay running (re-attached), others are final."""
        return {ref: self.poll(ref) for ref in refs}
