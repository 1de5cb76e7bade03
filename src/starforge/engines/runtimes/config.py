"""`runtimes:` of the console configuration: where runtimes are cached, how they are built, and which series have GPUs.

Paths are given by the settings module (the only reader of the environment); this module only validates values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..config_reader import known_block

__all__ = [
    "CPU_INDEX_URL",
    "CPU_TORCH_MODES",
    "GPU_ONLY_FRAMEWORKS",
    "INSTALLERS",
    "RuntimeSettings",
    "runtime_settings_from",
]

INSTALLERS = ("auto", "uv", "pip")
CPU_TORCH_MODES = ("auto", "none")  # or a torch requirement such as `torch==2.13.0+cpu`
CPU_INDEX_URL = "https://download.pytorch.org/whl/cpu"
GPU_ONLY_FRAMEWORKS = ("nemo-rl", "verl", "openrlhf")
_KNOWN = ("cache_dir", "hub_cache", "installer", "cpu_torch", "cpu_index_url", "cpu_series", "gpu_only", "requires",
          "build_workers", "build_timeout", "console_env")


@dataclass(frozen=True)
class RuntimeSettings:
    """How the local executor builds, caches and shares recipe runtimes (one venv per runtime id, Python, kind)."""

    cache_dir: Path
    hub_cache: Path  # HF_HOME of jobs: `<hub_cache>/<user>`, one folder per account
    installer: str = "auto"  # auto (uv when installed, else pip) | uv | pip
    cpu_torch: str = "auto"  # auto | none | a torch requirement pinned on CPU series
    cpu_index_url: str = CPU_INDEX_URL  # where torch's CPU build comes from when no local wheel has it
    cpu_series: tuple[str, ...] = ("cpu",)  # series without GPUs (every other series has them)
    gpu_only: tuple[str, ...] = GPU_ONLY_FRAMEWORKS  # frameworks that never run on a CPU series
    requires: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # the deployment's additions per runtime id
    build_workers: int = 2  # runtime builds at once (never on the scheduler's thread)
    build_timeout: float = 3600.0  # seconds before a build is ended and its jobs fail
    console_env: bool = True  # run on the console's interpreter a runtime its environment already satisfies


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"runtimes.{key}: must be a list of non-empty strings")
    return tuple(v.strip() for v in value)


def _requires(value: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise ValueError("runtimes.requires: must map runtime ids to lists of requirements, "
                         "e.g. {nemo-rl-0.7.0: [\"nemo-rl @ file:///opt/nemo-rl\"]}")
    return {str(key): _strings(items, f"requires.{key}") for key, items in value.items()}


def _cpu_torch(value: Any) -> str:
    if value is None or value is False:
        return "none"
    text = str(value).strip()
    if text in CPU_TORCH_MODES:
        return text
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        parsed = Requirement(text)
    except InvalidRequirement as exc:
        raise ValueError(f"runtimes.cpu_torch: must be auto, none or a torch requirement: {exc}") from exc
    if parsed.name.lower() != "torch":
        raise ValueError("runtimes.cpu_torch: must be auto, none or a torch requirement such as torch==2.13.0+cpu")
    return text


def _number(value: Any, key: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ValueError(f"runtimes.{key}: must be a number from {low:g} to {high:g}")
    return float(value)


def runtime_settings_from(raw: Any, defaults: RuntimeSettings) -> RuntimeSettings:
    """Return `defaults` updated by the `runtimes:` mapping `raw`; raise ValueError naming the bad key."""
    raw = known_block(raw, "runtimes", _KNOWN)
    values: dict[str, Any] = {}
    for key in ("cache_dir", "hub_cache"):
        if key in raw:
            if not isinstance(raw[key], str) or not raw[key].strip():
                raise ValueError(f"runtimes.{key}: must be a directory")
            values[key] = Path(raw[key]).expanduser().resolve()
    if "installer" in raw:
        if raw["installer"] not in INSTALLERS:
            raise ValueError(f"runtimes.installer: must be one of {', '.join(INSTALLERS)}")
        values["installer"] = raw["installer"]
    if "cpu_torch" in raw:
        values["cpu_torch"] = _cpu_torch(raw["cpu_torch"])
    if "cpu_index_url" in raw:
        url = raw["cpu_index_url"]
        if not isinstance(url, str) or not url.startswith(("https://", "http://", "file://")):
            raise ValueError("runtimes.cpu_index_url: must be an http(s) or file URL of a package index")
        values["cpu_index_url"] = url
    for key in ("cpu_series", "gpu_only"):
        if key in raw:
            values[key] = _strings(raw[key], key)
    if "requires" in raw:
        values["requires"] = _requires(raw["requires"])
    if "build_workers" in raw:
        values["build_workers"] = int(_number(raw["build_workers"], "build_workers", 1, 64))
    if "build_timeout" in raw:
        values["build_timeout"] = _number(raw["build_timeout"], "build_timeout", 1, 7 * 24 * 3600)
    if "console_env" in raw:
        if not isinstance(raw["console_env"], bool):
            raise ValueError("runtimes.console_env: must be true or false")
        values["console_env"] = raw["console_env"]
    return replace(defaults, **values)
