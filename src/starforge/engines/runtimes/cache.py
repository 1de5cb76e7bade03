"""The runtime cache: one venv per `RuntimeSpec` under `runtimes.cache_dir`, built once and shared by every job.

A build holds the runtime's file lock (`<cache>/.locks/<name>.lock`), so builds of one runtime from several jobs,
threads or processes (`sf console runtime build` beside a console) wait for a single build. A venv is built in
place (venvs cannot be moved) and its record is written last: a folder without a record is an interrupted build
and is removed before building again. Everything is readable by every user (jobs run as other uids) and shown to
jobs read-only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from importlib.metadata import distributions
from pathlib import Path

from ..sandbox import SYSTEM_DIRS
from .cpu_torch import check_resolution
from .environment import is_cpu_torch
from .installers import BuildFailed, Installer, Log
from .locking import file_lock
from .record import RuntimeRecord, read_record, write_record
from .spec import CPU, RuntimeSpec

__all__ = ["RuntimeCache"]

_VIEW_SCRIPT = (
    "import json, os, sys; print(json.dumps([sys.prefix, sys.base_prefix, "
    "os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))), *[p for p in sys.path if p]]))"
)


def _tree_size(root: Path) -> int:
    total = 0
    for current, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(current, name)).st_size
            except OSError:
                continue
    return total


def _outermost(paths: list[str]) -> tuple[str, ...]:
    system = [Path("/") / name for name in SYSTEM_DIRS]
    existing = sorted({Path(p).resolve() for p in paths if os.path.exists(p)}, key=lambda p: len(p.parts))
    out: list[Path] = []
    for path in existing:
        if not any(path == o or path.is_relative_to(o) for o in (*system, *out)):
            out.append(path)
    return tuple(str(p) for p in out)


def _open_to_all(root: Path) -> None:
    """Let every user read the venv (jobs of a root console run as their own uids); never follow links."""
    for current, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = os.path.join(current, name)
            try:
                mode = os.lstat(path).st_mode
                if not os.path.islink(path):
                    os.chmod(path, mode | 0o444 | (0o111 if mode & 0o100 else 0))
            except OSError:
                continue
    root.chmod(0o755)


class RuntimeCache:
    """Built runtimes under one folder: look one up, build one (once, under its lock), list them."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path_of(self, spec: RuntimeSpec) -> Path:
        """Return where the venv of `spec` lives."""
        return self.root / spec.dirname

    def lookup(self, spec: RuntimeSpec) -> RuntimeRecord | None:
        """Return the record of a finished build of `spec`, or None."""
        return read_record(self.path_of(spec))

    def records(self) -> list[RuntimeRecord]:
        """Return every finished runtime in the cache, by id, Python and kind."""
        if not self.root.is_dir():
            return []
        found = [read_record(path) for path in self.root.iterdir() if path.is_dir()]
        return sorted((r for r in found if r is not None), key=lambda r: (r.runtime_id, r.python, r.kind, -r.built_at))

    def build(self, spec: RuntimeSpec, installer: Callable[[], Installer], log: Log, *,
              force: bool = False) -> RuntimeRecord:
        """Return the runtime of `spec`, building it under its lock unless a finished build exists; raise BuildFailed."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        venv = self.path_of(spec)
        lock = self.root / ".locks" / f"{spec.dirname}.lock"
        with file_lock(lock, on_wait=lambda: log(f"another build of {spec.label} is under way; waiting for it")):
            record = read_record(venv)
            if record is not None and not force:
                log(f"runtime {spec.label} is built ({venv})")
                return record
            if venv.exists():
                log(f"removing an unfinished build at {venv}")
                shutil.rmtree(venv)
            try:
                return self._build(spec, installer(), venv, log)
            except BaseException:
                shutil.rmtree(venv, ignore_errors=True)
                raise

    def _build(self, spec: RuntimeSpec, installer: Installer, venv: Path, log: Log) -> RuntimeRecord:
        started = time.monotonic()
        log(f"building runtime {spec.label} with {installer.name}: {', '.join(spec.requirements) or '(nothing)'}")
        if spec.constraints or spec.extra_index_urls:
            log(f"constraints: {', '.join(spec.constraints) or '-'}; extra indexes: "
                f"{', '.join(spec.extra_index_urls) or '-'}")
        files = self.root / ".build" / spec.dirname
        shutil.rmtree(files, ignore_errors=True)
        try:
            installer.create(venv, log)
            if spec.cpu_check:
                reason = check_resolution(installer.resolve(venv, spec, files, log), spec.cpu_check)
                if reason:
                    raise BuildFailed(reason)
            installer.install(venv, spec, files, log)
        finally:
            shutil.rmtree(files, ignore_errors=True)
        torch = self._torch_of(venv, spec)
        view = self._view_of(venv)
        _open_to_all(venv)
        record = RuntimeRecord(
            runtime_id=spec.runtime_id, python=spec.python, kind=spec.kind, requirements=spec.requirements,
            path=str(venv), built_at=time.time(), size=_tree_size(venv), installer=installer.name,
            seconds=round(time.monotonic() - started, 2), digest=spec.digest, constraints=spec.constraints,
            torch=torch, view=view,
        )
        write_record(venv, record)
        log(f"runtime {spec.label} built in {record.seconds:.1f} s ({record.size / 1024**2:.1f} MiB)")
        return record

    @staticmethod
    def _torch_of(venv: Path, spec: RuntimeSpec) -> str:
        """Return the torch version the venv holds; on a CPU series a CUDA build fails the build."""
        site = sorted(venv.glob("lib/python*/site-packages"))
        for dist in distributions(path=[str(p) for p in site]):
            if (dist.metadata["Name"] or "").lower() != "torch":
                continue
            files = [str(f) for f in dist.files or ()]
            if spec.kind == CPU and not is_cpu_torch(dist.version, files):
                raise BuildFailed(f"this CPU runtime got torch {dist.version}, a CUDA build: pin a CPU build with "
                                  "runtimes.cpu_torch (e.g. torch==2.13.0+cpu) or runtimes.cpu_index_url")
            return dist.version
        return ""

    @staticmethod
    def _view_of(venv: Path) -> tuple[str, ...]:
        """Return the folders the venv's interpreter reads, outermost first (what a sandboxed job must see)."""
        done = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", _VIEW_SCRIPT], capture_output=True,
                              text=True, timeout=60)
        if done.returncode != 0:
            raise BuildFailed(f"the runtime's interpreter does not start: {done.stderr.strip()[-500:]}")
        return _outermost([str(venv), *json.loads(done.stdout)])
