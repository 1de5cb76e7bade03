"""Recipe runtimes for the local executor: built once per (runtime id, Python, series kind), cached, shared.

`Runtimes` plans a job's runtime and builds it on worker threads; `RuntimeCache` holds the venvs; `blocker` says
whether a recipe can run on a series at all (admission's `check_runtime`); `RuntimeSettings` is `runtimes:` of the
console configuration. How it works for operators: docs/frameworks.md.

The names below are loaded on first use (PEP 562): the console's settings need only `RuntimeSettings`, and `sf
console …` commands must not pay for the installers, the environment probe and `importlib.metadata` they never use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time `__getattr__` imports each name's module on first use
    from .ahead import UnknownRuntime, build_ahead, default_kind
    from .cache import RuntimeCache
    from .config import CPU_INDEX_URL, GPU_ONLY_FRAMEWORKS, RuntimeSettings, runtime_settings_from
    from .cpu_torch import TorchPlan, check_resolution, cpu_wheels, torch_plan
    from .environment import ConsoleEnvironment, console_environment, is_cpu_torch
    from .installers import BuildFailed
    from .jobside import jobside_copy
    from .pipconfig import PipConfig, read_pip_config
    from .plan import Blocker, blocker, catalog_requirements, job_kind, series_kind, variant_requirements
    from .record import RuntimeRecord
    from .service import BuildLog, RuntimePlan, Runtimes
    from .spec import CPU, GPU, KINDS, JobRuntime, RuntimeSpec

_WHERE: dict[str, str] = {
    "UnknownRuntime": "ahead",
    "build_ahead": "ahead",
    "default_kind": "ahead",
    "RuntimeCache": "cache",
    "CPU_INDEX_URL": "config",
    "GPU_ONLY_FRAMEWORKS": "config",
    "RuntimeSettings": "config",
    "runtime_settings_from": "config",
    "TorchPlan": "cpu_torch",
    "check_resolution": "cpu_torch",
    "cpu_wheels": "cpu_torch",
    "torch_plan": "cpu_torch",
    "ConsoleEnvironment": "environment",
    "console_environment": "environment",
    "is_cpu_torch": "environment",
    "BuildFailed": "installers",
    "jobside_copy": "jobside",
    "PipConfig": "pipconfig",
    "read_pip_config": "pipconfig",
    "Blocker": "plan",
    "blocker": "plan",
    "catalog_requirements": "plan",
    "job_kind": "plan",
    "series_kind": "plan",
    "variant_requirements": "plan",
    "RuntimeRecord": "record",
    "BuildLog": "service",
    "RuntimePlan": "service",
    "Runtimes": "service",
    "CPU": "spec",
    "GPU": "spec",
    "KINDS": "spec",
    "JobRuntime": "spec",
    "RuntimeSpec": "spec",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "CPU",
    "CPU_INDEX_URL",
    "GPU",
    "GPU_ONLY_FRAMEWORKS",
    "KINDS",
    "Blocker",
    "BuildFailed",
    "BuildLog",
    "ConsoleEnvironment",
    "JobRuntime",
    "PipConfig",
    "RuntimeCache",
    "RuntimePlan",
    "RuntimeRecord",
    "RuntimeSettings",
    "RuntimeSpec",
    "Runtimes",
    "TorchPlan",
    "UnknownRuntime",
    "blocker",
    "build_ahead",
    "catalog_requirements",
    "check_resolution",
    "console_environment",
    "cpu_wheels",
    "default_kind",
    "is_cpu_torch",
    "job_kind",
    "jobside_copy",
    "read_pip_config",
    "runtime_settings_from",
    "series_kind",
    "torch_plan",
    "variant_requirements",
]
