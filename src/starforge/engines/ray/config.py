"""`executors.ray` of the console configuration: how series map onto a Ray cluster, validated into `RaySettings`.

Parsing raises ValueError naming the offending key (the settings module turns it into a SettingsError). Importing
this module never imports ray.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config_reader import known_block, slot_counts
from ..jobnet import EGRESS, network_mode
from ..slurm.config import RAY_FRAMEWORKS

__all__ = ["RaySettings", "ray_settings_from"]

_KNOWN = ("address", "series_resources", "cpu_series", "ray_frameworks", "shared_runtime", "capacity", "sandbox",
          "network", "slots_per_node")
_RESOURCE = re.compile(r"[A-Za-z0-9_.:/-]+")  # a Ray resource name (custom resources, `accelerator_type:H200`)


@dataclass(frozen=True)
class RaySettings:
    """How the Ray executor places jobs (see docs/engines.md, `## Ray`, for each key).

    A GPU series is pinned through the Ray resource `series_resources[series]` (default `accelerator_type:<SERIES>`,
    the resource Ray itself declares on a node with such GPUs); `cpu_series` count CPUs instead of GPUs.
    `shared_runtime` says whether every node sees the console's runtime folders at the same path; when it does not,
    the runtime's requirements travel in the job's `runtime_env` (`pip`) and Ray builds them on the node.
    `capacity` (slots per series) overrides what the cluster's nodes declare. `slots_per_node` is a series' node
    size: the slots one node offers it (its CPUs or GPUs by default), so `<series>:<n>` beyond it spans nodes.
    `sandbox` starts each job in the job sandbox on its node (not Ray-based frameworks), in its own `network`.
    """

    address: str = ""  # the Jobs API (dashboard) URL, e.g. http://head:8265; `--ray-address` overrides it
    series_resources: Mapping[str, str] = field(default_factory=dict)
    cpu_series: tuple[str, ...] = ("cpu",)
    ray_frameworks: tuple[str, ...] = RAY_FRAMEWORKS
    shared_runtime: bool = True
    capacity: Mapping[str, int] = field(default_factory=dict)
    sandbox: bool = True  # start each job in the bubblewrap job sandbox on its node (not Ray-based frameworks)
    network: str = EGRESS  # none | egress: what a sandboxed job's own network namespace reaches on its node
    slots_per_node: Mapping[str, int] = field(default_factory=dict)  # a series' node size (default: what nodes have)

    def resource_for(self, series: str) -> str:
        """Return the Ray resource that pins `series` ("" for a CPU series)."""
        if series in self.cpu_series:
            return ""
        return self.series_resources.get(series) or f"accelerator_type:{series.upper()}"

    def is_cpu(self, series: str) -> bool:
        """Return True when the slots of `series` are CPUs."""
        return series in self.cpu_series

    def uses_ray(self, framework: str) -> bool:
        """Return True when recipes of `framework` start their own Ray workers (the driver holds no GPU)."""
        return framework in self.ray_frameworks


def _names(raw: Any, key: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(item, str) and item.strip() for item in raw):
        raise ValueError(f"executors.ray.{key}: must be a list of names, e.g. [cpu]")
    return tuple(item.strip() for item in raw)


def ray_settings_from(raw: Any) -> RaySettings:
    """Return the Ray settings read from the `executors.ray` mapping; raise ValueError naming a bad key."""
    raw = known_block(raw, "executors.ray", _KNOWN)
    values: dict[str, Any] = {}
    if "address" in raw:
        address = raw["address"]
        if not isinstance(address, str) or not re.fullmatch(r"https?://[^\s/]+/?", address):
            raise ValueError("executors.ray.address: must be the Jobs API URL, e.g. http://ray-head:8265")
        values["address"] = address.rstrip("/")
    if "series_resources" in raw:
        resources = raw["series_resources"]
        if not isinstance(resources, dict):
            raise ValueError("executors.ray.series_resources: must map series to Ray resources, "
                             "e.g. {h200: \"accelerator_type:H200\"}")
        for series, resource in resources.items():
            if not isinstance(resource, str) or not _RESOURCE.fullmatch(resource):
                raise ValueError(f"executors.ray.series_resources.{series}: must be a Ray resource name "
                                 "(letters, digits and _.:/-), e.g. accelerator_type:H200")
        values["series_resources"] = {str(k): v for k, v in resources.items()}
    if "cpu_series" in raw:
        values["cpu_series"] = _names(raw["cpu_series"], "cpu_series")
    if "ray_frameworks" in raw:
        values["ray_frameworks"] = _names(raw["ray_frameworks"], "ray_frameworks")
    if "shared_runtime" in raw:
        if not isinstance(raw["shared_runtime"], bool):
            raise ValueError("executors.ray.shared_runtime: must be true or false")
        values["shared_runtime"] = raw["shared_runtime"]
    if "capacity" in raw:
        values["capacity"] = slot_counts(raw["capacity"], "executors.ray.capacity")
    if "slots_per_node" in raw:
        sizes = slot_counts(raw["slots_per_node"], "executors.ray.slots_per_node")
        if not all(sizes.values()):
            raise ValueError("executors.ray.slots_per_node: a node offers a series at least one slot")
        values["slots_per_node"] = sizes
    if "sandbox" in raw:
        sandbox = raw["sandbox"]  # YAML 1.1 reads a bare `off` as False
        if sandbox not in (True, False, "on", "off"):
            raise ValueError("executors.ray.sandbox: must be on or off")
        values["sandbox"] = sandbox in (True, "on")
    if "network" in raw:
        values["network"] = network_mode(raw["network"], "executors.ray.network")
    if values.get("sandbox", True) and values.get("shared_runtime", True) is False:
        raise ValueError("executors.ray.shared_runtime: false builds each job's runtime on its node, where the job "
                         "sandbox cannot show it: set executors.ray.sandbox: off to run jobs unsandboxed as Ray's user")
    return RaySettings(**values)
