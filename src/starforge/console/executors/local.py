"""The local executor: each job is a process group on this machine, with its output in `<run>/logs/output.log`.

A ref is `local:<pid>:<start ticks>:<run dir>`; the start time (from /proc) tells our job from a later process that
reuses the pid. Children started by this console are reaped with `Popen.poll`; jobs re-attached after a restart
are watched through /proc, and their exit status is read from `<run>/logs/exit.json`, which `forge-launch` writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from .base import ExecState, ExecutorError, LaunchRequest

__all__ = ["LocalExecutor", "detect_gpus"]

OUTPUT = "output.log"
EXIT_FILE = "exit.json"


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


def _start_ticks(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    if fields and fields[0] == "Z":  # a zombie has finished
        return None
    return int(fields[19]) if len(fields) > 19 else None


def _parse_ref(ref: str) -> tuple[int, int, Path]:
    kind, pid, ticks, run_dir = ref.split(":", 3)
    if kind != "local":
        raise ValueError(f"not a local executor ref: {ref}")
    return int(pid), int(ticks), Path(run_dir)


class LocalExecutor:
    """Run jobs as local process groups; GPU series found by nvidia-smi are assigned via CUDA_VISIBLE_DEVICES."""

    name = "local"

    def __init__(self, capacity: dict[str, int], gpus: dict[str, list[int]] | None = None) -> None:
        self._gpus = gpus if gpus is not None else detect_gpus()
        self._capacity = {**{s: len(ids) for s, ids in self._gpus.items()}, **capacity}
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._devices_in_use: dict[str, set[int]] = {}
        self._devices_of: dict[int, dict[str, list[int]]] = {}
        self._lock = threading.Lock()

    def capacity(self) -> dict[str, int]:
        """Return the slots per series: configured ones plus GPU series found on this machine."""
        return dict(self._capacity)

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

    def _release(self, pid: int) -> None:
        with self._lock:
            for series, ids in self._devices_of.pop(pid, {}).items():
                self._devices_in_use.get(series, set()).difference_update(ids)

    def submit(self, request: LaunchRequest) -> str:
        """Start the job in its own session; its stdout and stderr go to `<run>/logs/output.log`."""
        logs = request.run_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        (logs / EXIT_FILE).unlink(missing_ok=True)
        devices = self._assign_devices(request)
        env = {**request.env, "FORGE_EXIT_FILE": str(logs / EXIT_FILE)}
        if devices:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for ids in devices.values() for i in ids)
        try:
            with (logs / OUTPUT).open("ab") as out:
                proc = subprocess.Popen(
                    list(request.argv), cwd=request.cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                )
        except OSError as exc:
            with self._lock:
                for series, ids in devices.items():
                    self._devices_in_use.get(series, set()).difference_update(ids)
            raise ExecutorError(f"cannot start {request.argv[0]}: {exc}") from exc
        ticks = _start_ticks(proc.pid) or 0
        with self._lock:
            self._children[proc.pid] = proc
            self._devices_of[proc.pid] = devices
        return f"local:{proc.pid}:{ticks}:{request.run_dir}"

    def _alive(self, pid: int, ticks: int) -> bool:
        return _start_ticks(pid) == ticks

    def poll(self, ref: str) -> ExecState:
        """Return running, exited (with the exit code or signal) or lost."""
        pid, ticks, run_dir = _parse_ref(ref)
        with self._lock:
            child = self._children.get(pid)
        if child is not None:
            code = child.poll()
            if code is None:
                return ExecState("running")
            with self._lock:
                self._children.pop(pid, None)
            self._release(pid)
            if code < 0:
                return ExecState("exited", exit_code=128 - code, signal=-code)
            return ExecState("exited", exit_code=code)
        if self._alive(pid, ticks):
            return ExecState("running")
        return self._from_exit_file(run_dir)

    def _from_exit_file(self, run_dir: Path) -> ExecState:
        try:
            record = json.loads((run_dir / "logs" / EXIT_FILE).read_text())
        except (OSError, ValueError):
            return ExecState("lost", detail="the job's process is gone and left no exit record (killed?)")
        code = record.get("exit_code")
        sig = record.get("signal")
        return ExecState("exited", exit_code=code if isinstance(code, int) else None,
                         signal=sig if isinstance(sig, int) else None)

    def logs(self, ref: str, offset: int) -> tuple[bytes, int]:
        """Return the output written since `offset`."""
        _pid, _ticks, run_dir = _parse_ref(ref)
        path = run_dir / "logs" / OUTPUT
        try:
            with path.open("rb") as handle:
                handle.seek(offset)
                data = handle.read(4 * 1024 * 1024)
        except FileNotFoundError:
            return b"", offset
        return data, offset + len(data)

    def stop(self, ref: str, grace: float) -> None:
        """SIGTERM the job's process group, then SIGKILL it if it still runs after `grace` seconds."""
        pid, ticks, _run_dir = _parse_ref(ref)
        if not self._alive(pid, ticks) and pid not in self._children:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)

        def escalate() -> None:
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                if not self._alive(pid, ticks):
                    return
                time.sleep(0.1)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)

        threading.Thread(target=escalate, name=f"stop-{pid}", daemon=True).start()

    def reconcile(self, refs: list[str]) -> dict[str, ExecState]:
        """Return the state of each ref after a restart: live jobs stay running (re-attached), others are final."""
        return {ref: self.poll(ref) for ref in refs}
