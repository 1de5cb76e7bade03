"""A probe installer for runtime tests: a venv whose interpreter is this one, counted installs, a gate to hold them."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from starforge.engines.runtimes import BuildFailed, PipConfig, Runtimes, RuntimeSettings, RuntimeSpec
from starforge.engines.runtimes.installers import Installer, Log

__all__ = ["Probe", "ProbeRuntimes"]


class Probe(Installer):
    """Makes a venv whose interpreter is this one, and counts installs; `gate` holds the install until set."""

    name = "probe"

    def __init__(self, gate: threading.Event, fail: str = "") -> None:
        super().__init__(PipConfig(), 60)
        self.gate, self.fail = gate, fail
        self.installs = 0
        self.lock = threading.Lock()

    def create(self, venv: Path, log: Log) -> None:
        (venv / "bin").mkdir(parents=True)
        os.symlink(sys.executable, venv / "bin" / "python")
        log("created")

    def resolve(self, venv: Path, spec: RuntimeSpec, files: Path, log: Log) -> list[tuple[str, str]]:
        return []

    def install(self, venv: Path, spec: RuntimeSpec, files: Path, log: Log) -> None:
        with self.lock:
            self.installs += 1
        assert self.gate.wait(30)
        log(f"installed {', '.join(spec.requirements)}")
        if self.fail:
            raise BuildFailed(self.fail)


class ProbeRuntimes(Runtimes):
    def __init__(self, settings: RuntimeSettings, installer: Probe) -> None:
        super().__init__(settings, pip_config=PipConfig())
        self.probe = installer

    def installer(self) -> Installer:
        return self.probe
