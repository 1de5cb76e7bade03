"""`Runtimes`: which runtime a job runs on, and its build on worker threads — cached, shared, logged per job.

The scheduler asks `plan` for a job's runtime: the console's own interpreter (custom recipes, runtimes without
requirements, or requirements the console's environment already satisfies), or a `RuntimeSpec` to build. A spec
already in the cache starts at once; otherwise `prepare` builds it on a worker thread — one build per runtime
however many jobs wait for it — and tees the installer's output into every waiting job's log.
"""

from __future__ import annotations

import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..build_log import BuildLog
from .cache import RuntimeCache
from .config import RuntimeSettings
from .cpu_torch import TorchPlan, torch_plan
from .environment import ConsoleEnvironment, console_environment
from .installers import Installer, Log, choose_installer
from .jobside import jobside_copy
from .pipconfig import PipConfig, read_pip_config
from .plan import USER_MANAGED, variant_requirements
from .record import RuntimeRecord
from .spec import CPU, GPU, JobRuntime, RuntimeSpec

__all__ = ["BuildLog", "RuntimePlan", "Runtimes"]

PREFIX = "[runtime] "


@dataclass(frozen=True)
class RuntimePlan:
    """A job's runtime: a spec to build (or reuse), or None for the console's own interpreter, and why."""

    spec: RuntimeSpec | None
    note: str


class Runtimes:
    """The runtimes of one console (or of `sf console runtime`): plans, the cache and the build workers."""

    def __init__(self, settings: RuntimeSettings, *, env: ConsoleEnvironment | None = None,
                 pip_config: PipConfig | None = None) -> None:
        self.settings = settings
        self.cache = RuntimeCache(settings.cache_dir)
        self._env = env  # read on first use: listing every installed distribution costs console start ~40 ms
        self.python = f"{sys.version_info.major}.{sys.version_info.minor}"
        self._pip_config = pip_config
        self._torch: TorchPlan | None = None
        self._missing: dict[tuple[tuple[str, ...], str], list[str]] = {}
        self._jobside: Path | None = None
        self._inflight: dict[str, tuple[Future[RuntimeRecord], BuildLog]] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(settings.build_workers, thread_name_prefix="starforge-runtime")

    @property
    def env(self) -> ConsoleEnvironment:
        """Return the environment of the console's interpreter (the one given, else this process's, read once)."""
        if self._env is None:
            self._env = console_environment()
        return self._env

    # what a job runs on ----------------------------------------------------------------------------------------
    def pip_config(self) -> PipConfig:
        """Return pip's configured sources on this machine (read once)."""
        if self._pip_config is None:
            self._pip_config = read_pip_config()
        return self._pip_config

    def torch_plan(self) -> TorchPlan:
        """Return how CPU runtimes get torch (decided once)."""
        if self._torch is None:
            self._torch = torch_plan(self.settings.cpu_torch, self.settings.cpu_index_url,
                                     self.pip_config().find_links)
        return self._torch

    def spec_for(self, runtime_id: str, requirements: tuple[str, ...], kind: str) -> RuntimeSpec:
        """Return the spec of a runtime id on a series kind (torch's CPU build pinned on CPU series)."""
        if kind != CPU:
            return RuntimeSpec(runtime_id, GPU, self.python, requirements)
        torch = self.torch_plan()
        return RuntimeSpec(runtime_id, CPU, self.python, requirements, torch.constraints, torch.extra_index_urls,
                           torch.check)

    def missing(self, requirements: tuple[str, ...], kind: str) -> list[str]:
        """Return what the console's environment lacks of `requirements` on a series kind (cached)."""
        key = (requirements, kind)
        if key not in self._missing:
            self._missing[key] = self.env.missing(requirements, gpu=kind == GPU)
        return self._missing[key]

    def plan(self, recipe: Any, version: str, kind: str) -> RuntimePlan:
        """Return the runtime a job of `recipe` at `version` runs on, on a series of `kind`."""
        if recipe.framework == USER_MANAGED:
            return RuntimePlan(None, "custom/custom: the job manages its own runtime")
        requirements = variant_requirements(recipe, version, self.settings)
        if not requirements:
            return RuntimePlan(None, "the recipe declares no runtime requirements: the console's interpreter")
        if self.settings.console_env and not self.missing(requirements, kind):
            return RuntimePlan(None, f"the console's environment satisfies {', '.join(requirements)}")
        variant = recipe.runtime.versions.get(version)
        runtime_id = (variant.runtime_id if variant else "") or f"{recipe.framework}-{version}"
        spec = self.spec_for(runtime_id, requirements, kind)
        return RuntimePlan(spec, f"runtime {spec.label}")

    def ready(self, spec: RuntimeSpec) -> RuntimeRecord | None:
        """Return the built runtime of `spec`, or None when it must be built first."""
        return self.cache.lookup(spec)

    def jobside(self) -> Path:
        """Return the folder holding the `starforge` copy jobs on built runtimes import (made once)."""
        if self._jobside is None:
            self._jobside = jobside_copy(self.settings.cache_dir)
        return self._jobside

    def job_runtime(self, record: RuntimeRecord) -> JobRuntime:
        """Return how a job starts on the built runtime `record`."""
        jobside = self.jobside()
        paths = tuple(dict.fromkeys((*(Path(p) for p in record.view), Path(record.path), jobside)))
        label = f"{record.runtime_id} (python {record.python}, {record.kind})"
        return JobRuntime(Path(record.path), record.interpreter, str(jobside), paths, label)

    # building --------------------------------------------------------------------------------------------------
    def installer(self) -> Installer:
        """Return the installer `runtimes.installer` chooses."""
        return choose_installer(self.settings.installer, self.pip_config(), self.settings.build_timeout)

    def build(self, spec: RuntimeSpec, log: Log, *, force: bool = False) -> RuntimeRecord:
        """Build `spec` now on this thread (or find it built); raise BuildFailed with the installer's error."""
        record = self.cache.build(spec, self.installer, log, force=force)
        self.jobside()
        return record

    def prepare(self, spec: RuntimeSpec, log_file: Path) -> Future[RuntimeRecord]:
        """Build `spec` on a worker thread (joining a build already under way) with its output in `log_file`."""
        with self._lock:
            inflight = self._inflight.get(spec.dirname)
            if inflight is None:
                log = BuildLog()
                future = self._pool.submit(self._run, spec, log)
                inflight = self._inflight[spec.dirname] = (future, log)
            inflight[1].attach(log_file)
            return inflight[0]

    def _run(self, spec: RuntimeSpec, log: BuildLog) -> RuntimeRecord:
        try:
            return self.build(spec, log)
        except Exception as exc:
            log(f"the build failed: {exc}")
            raise
        finally:
            with self._lock:
                self._inflight.pop(spec.dirname, None)

    def shutdown(self) -> None:
        """Stop taking builds; builds under way finish in the background (their jobs are prepared again on restart)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
