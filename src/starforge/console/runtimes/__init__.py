"""Recipe runtimes for the local executor: built once per (runtime id, Python, series kind), cached, shared.

`Runtimes` plans a job's runtime and builds it on worker threads; `RuntimeCache` holds the venvs; `blocker` says
whether a recipe can run on a series at all (admission's `check_runtime`); `RuntimeSettings` is `runtimes:` of the
console configuration. How it works for operators: docs/frameworks.md.
"""

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
