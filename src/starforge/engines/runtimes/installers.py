"""The installers a runtime is built with: uv when it is installed (fast), else pip; both stream their output.

Each installer creates a venv from the console's interpreter, can resolve requirements without installing them
(to check a CPU runtime's torch first), and installs them. Their output goes, line by line, to the build log; a
failure raises `BuildFailed` whose reason is the installer's own error lines.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

from .pipconfig import PipConfig
from .spec import RuntimeSpec

__all__ = ["BuildFailed", "Installer", "Log", "PipInstaller", "UvInstaller", "choose_installer", "run_logged"]

Log = Callable[[str], None]
_REASON_LINES = 12


class BuildFailed(RuntimeError):
    """Raised when a runtime cannot be built; the message is the installer's error (the jobs' failure reason)."""


def _reason(lines: Sequence[str], fallback: str) -> str:
    errors = [line.strip() for line in lines if line.lstrip().lower().startswith(("error:", "×", "╰─▶"))]
    chosen = errors or [line.strip() for line in lines if line.strip()][-_REASON_LINES:]
    return "\n".join(chosen[-_REASON_LINES:]) or fallback


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update({"PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONUNBUFFERED": "1",
                "UV_NO_PROGRESS": "1"})
    return env


def run_logged(argv: Sequence[str], log: Log, *, timeout: float, what: str) -> None:
    """Run an installer command, sending each output line to `log`; raise BuildFailed with its error lines."""
    log(f"$ {' '.join(argv)}")
    try:
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", env=_environment(), stdin=subprocess.DEVNULL,
                                start_new_session=True)
    except OSError as exc:
        raise BuildFailed(f"{what}: cannot run {argv[0]}: {exc}") from exc
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    tail: deque[str] = deque(maxlen=200)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            tail.append(line)
            log(line)
        code = proc.wait()
    finally:
        timer.cancel()
    if timed_out.is_set():
        raise BuildFailed(f"{what} took longer than {timeout:g} s (runtimes.build_timeout) and was ended")
    if code != 0:
        raise BuildFailed(_reason(list(tail), f"{what} failed with exit code {code}"))


class Installer:
    """Creates a runtime's venv, resolves and installs its requirements."""

    name = ""

    def __init__(self, pip_config: PipConfig, timeout: float) -> None:
        self.pip_config = pip_config
        self.timeout = timeout

    def create(self, venv: Path, log: Log) -> None:
        """Create an empty venv at `venv` on the console's interpreter."""
        raise NotImplementedError

    def resolve(self, venv: Path, spec: RuntimeSpec, files: Path, log: Log) -> list[tuple[str, str]]:
        """Return the (name, version) pairs the requirements resolve to, installing nothing."""
        raise NotImplementedError

    def install(self, venv: Path, spec: RuntimeSpec, files: Path, log: Log) -> None:
        """Install the requirements into the venv."""
        raise NotImplementedError

    @staticmethod
    def write_inputs(spec: RuntimeSpec, files: Path) -> tuple[Path, Path | None]:
        """Write the requirements (and constraints) files the installer reads; return their paths."""
        files.mkdir(parents=True, exist_ok=True)
        requirements = files / "requirements.txt"
        requirements.write_text("".join(f"{r}\n" for r in spec.requirements), encoding="utf-8")
        if not spec.constraints:
            return requirements, None
        constraints = files / "constraints.txt"
        constraints.write_text("".join(f"{c}\n" for c in spec.constraints), encoding="utf-8")
        return requirements, constraints


class PipInstaller(Installer):
    """pip: the console's own pip drives the venv (`pip --python`), or the venv's pip when the console has none."""

    name = "pip"

    def __init__(self, pip_config: PipConfig, timeout: float) -> None:
        super().__init__(pip_config, timeout)
        self.own_pip = importlib.util.find_spec("pip") is not None

    def create(self, venv: Path, log: Log) -> None:
        """Create the venv (without pip when the console's pip drives it)."""
        extra = ["--without-pip"] if self.own_pip else []
        run_logged([sys.executable, "-m", "venv", *extra, str(venv)], log, timeout=self.timeout, what="creating the venv")

    def _pip(self, venv: Path) -> list[str]:
        python = str(venv / "bin" / "python")
        return [sys.executable, "-m", "pip", "--python", python] if self.own_pip else [python, "-m", "pip"]

    def _args(self, spec: RuntimeSpec, files: Path) -> list[str]:
        requirements, constraints = self.write_inputs(spec, files)
        args = ["--no-input", "--progress-bar", "off", "-r", str(requirements)]
        if constraints is not None:
            args += ["-c", str(constraints)]
        for url in spec.extra_index_urls:
            args += ["--extra-index-url", url]
        return args

    def resolve(self, venv: Path, spec: RuntimeSpec, files: Path, log: Log) -> list[tuple[str, str]]:
        """Resolve with `pip install --dry-run --report`."""
        report = files / "resolution.json"
        run_logged([*self._pip(venv), "install", "--dry-run", "--ignore-installed", "--quiet", "--report",
                    str(report), *self._args(spec, files)], log, timeout=self.timeout, what="resolving")
        data = json.loads(report.read_text(encoding="utf-8"))
        return [(str(item["metadata"]["name"]), str(item["metadata"]["version"])) for item in data.get("install", [])]

    def install(self, venv: Path, spec: RuntimeSpec, files: Path, log: Log) -> None:
        """Install with `pip install -r`."""
        run_logged([*self._pip(venv), "install", *self._args(spec, files)], log, timeout=self.timeout,
                   what="installing")


class UvInstaller(Installer):
    """uv, given pip's find-links, indexes and constraints on its command line (uv does not read pip's config)."""

    name = "uv"

    def __init__(self, pip_config: PipConfig, timeout: float, uv: str) -> None:
        super().__init__(pip_config, timeout)
        self.uv = uv

    def create(self, venv: Path, log: Log) -> None:
        """Create the venv with `uv venv`."""
        run_logged([self.uv, "venv", "--quiet", "--python", sys.executable, str(venv)], log, timeout=self.timeout,
                   what="creating the venv")

    def _args(self, venv: Path, spec: RuntimeSpec, files: Path) -> list[str]:
        requirements, constraints = self.write_inputs(spec, files)
        # pip's semantics: every index and find-links folder offers every version (uv's default takes a package
        # from the first index that has it, so a mirror holding older versions hides the pinned one)
        args = ["--python", str(venv / "bin" / "python"), "--index-strategy", "unsafe-best-match",
                *self.pip_config.uv_args()]
        if constraints is not None:
            args += ["--constraint", str(constraints)]
        for url in spec.extra_index_urls:
            args += ["--extra-index-url", url]
        return [str(requirements), *args]

    def resolve(self, venv: Path, spec: RuntimeSpec, files: Path, log: Log) -> list[tuple[str, str]]:
        """Resolve with `uv pip compile`."""
        out = files / "resolution.txt"
        run_logged([self.uv, "pip", "compile", "--quiet", "--no-header", "--no-annotate", "-o", str(out),
                    *self._args(venv, spec, files)], log, timeout=self.timeout, what="resolving")
        pairs = []
        for line in out.read_text(encoding="utf-8").splitlines():
            name, sep, version = line.split(";", 1)[0].strip().partition("==")
            if sep and not name.startswith(("#", "-")):
                pairs.append((name.strip(), version.strip()))
        return pairs

    def install(self, venv: Path, spec: RuntimeSpec, files: Path, log: Log) -> None:
        """Install with `uv pip install -r`, compiling bytecode (jobs cannot write into the read-only venv)."""
        requirements, *rest = self._args(venv, spec, files)
        run_logged([self.uv, "pip", "install", "--compile-bytecode", "-r", requirements, *rest], log,
                   timeout=self.timeout, what="installing")


def _find_uv() -> str:
    found = shutil.which("uv")
    if found:
        return found
    if importlib.util.find_spec("uv") is not None:
        with contextlib.suppress(Exception):
            from uv import find_uv_bin  # type: ignore[import-not-found,unused-ignore]

            return str(find_uv_bin())
    return ""


def choose_installer(setting: str, pip_config: PipConfig, timeout: float) -> Installer:
    """Return the installer `runtimes.installer` names (`auto`: uv when installed, else pip); raise BuildFailed."""
    uv = _find_uv() if setting in ("auto", "uv") else ""
    if uv:
        return UvInstaller(pip_config, timeout, uv)
    if setting == "uv":
        raise BuildFailed("runtimes.installer is uv, and uv is not installed where the console runs "
                          "(pip install uv, or set runtimes.installer: pip)")
    return PipInstaller(pip_config, timeout)
