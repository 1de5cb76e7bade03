"""The local engine's settings reader (`executors.local`: the job sandbox and its limits) and its factory.

Reading raises ValueError naming the offending key (the settings module turns it into a SettingsError).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from .factory import EngineContext
from .isolation import IsolationConfig
from .jobnet import network_mode
from .local import LocalExecutor

__all__ = ["build", "local_settings_from"]

_KNOWN = ("sandbox", "network", "uid_range", "memory_per_slot", "cpus_per_slot", "cgroup")
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(?:([KMGT])(?:i?B)?|B)?\s*", re.IGNORECASE)


def _bytes(value: Any, key: str) -> int:
    """Read a size: a number of bytes, or a number with K, M, G or T (powers of 1024; `GiB`, `GB`, `G` alike)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{key}: must be a size such as 4GiB, 512MiB or a number of bytes")
    power = " KMGT".index(match.group(2).upper()) if match.group(2) else 0
    return int(float(match.group(1)) * 1024**power)


def local_settings_from(raw: Any) -> IsolationConfig:
    """Return `executors.local` validated into an `IsolationConfig` (missing keys keep their defaults)."""
    if not isinstance(raw, dict):
        raise ValueError("executors.local: must be a mapping {sandbox, network, uid_range, memory_per_slot, "
                         "cpus_per_slot, cgroup}")
    unknown = set(raw) - set(_KNOWN)
    if unknown:
        raise ValueError(f"executors.local: unknown keys {', '.join(sorted(map(str, unknown)))} "
                         f"(known: {', '.join(sorted(_KNOWN))})")
    values: dict[str, Any] = {}
    if "sandbox" in raw:
        sandbox = raw["sandbox"]  # YAML 1.1 reads a bare `off` as False
        if sandbox not in (True, False, "on", "off"):
            raise ValueError("executors.local.sandbox: must be on or off")
        values["sandbox"] = sandbox in (True, "on")
    if "network" in raw:
        values["network"] = network_mode(raw["network"], "executors.local.network")
    if "uid_range" in raw:
        pair = raw["uid_range"]
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair)):
            raise ValueError("executors.local.uid_range: must be [first, last], e.g. [61184, 65519]")
        values["uid_range"] = (pair[0], pair[1])
    if "memory_per_slot" in raw:
        values["memory_per_slot"] = _bytes(raw["memory_per_slot"], "executors.local.memory_per_slot")
    if "cpus_per_slot" in raw:
        cpus = raw["cpus_per_slot"]
        if isinstance(cpus, bool) or not isinstance(cpus, int | float) or not 0 < cpus <= 4096:
            raise ValueError("executors.local.cpus_per_slot: must be a number of CPUs > 0")
        values["cpus_per_slot"] = float(cpus)
    if "cgroup" in raw:
        cgroup = raw["cgroup"]
        if cgroup is False:
            cgroup = "off"
        if not isinstance(cgroup, str) or not (cgroup in ("auto", "off") or cgroup.startswith("/sys/fs/cgroup/")):
            raise ValueError("executors.local.cgroup: must be auto, off or a directory under /sys/fs/cgroup")
        values["cgroup"] = cgroup
    return replace(IsolationConfig(), **values)


def build(_config: IsolationConfig, context: EngineContext) -> LocalExecutor:
    """Return the local executor: the console's slots, sandboxed by the isolation the console prepared from
    `executors.local` when it started."""
    return LocalExecutor(dict(context.capacity), isolation=context.isolation, stop_grace=context.stop_grace)
