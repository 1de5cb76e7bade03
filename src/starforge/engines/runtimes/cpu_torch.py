"""Torch on CPU series: a runtime built for a series without GPUs gets torch's CPU build, never a CUDA one.

`runtimes.cpu_torch` chooses how:

- `auto` (default): a `torch-<v>+cpu` wheel in pip's find-links that this interpreter can install is pinned as a
  constraint (`torch==<v>+cpu`: used only when the requirements need torch); without one, PyTorch's CPU index
  (`runtimes.cpu_index_url`) is added and the resolution is checked before anything is installed;
- a requirement such as `torch==2.13.0+cpu`: pinned the same way, from the find-links or else the CPU index;
- `none`: a CPU runtime whose requirements need torch fails to build, saying so.

After every CPU build the installed torch is checked again: a CUDA build fails the build with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.tags import sys_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from .pipconfig import local_dirs

__all__ = ["TorchPlan", "check_resolution", "cpu_wheels", "torch_plan"]


@dataclass(frozen=True)
class TorchPlan:
    """How a CPU runtime gets torch: constraints, extra indexes, the check of the resolution, and why."""

    constraints: tuple[str, ...] = ()
    extra_index_urls: tuple[str, ...] = ()
    check: str = ""  # "" | "cpu-build" | "no-torch"
    note: str = ""


def cpu_wheels(dirs: Iterable[Path]) -> list[tuple[Version, Path]]:
    """Return the torch wheels with a `cpu` local version this interpreter can install, highest version first."""
    supported = set(sys_tags())
    found = []
    for folder in dirs:
        for wheel in folder.glob("torch-*.whl"):
            try:
                name, version, _build, tags = parse_wheel_filename(wheel.name)
            except InvalidWheelFilename:
                continue
            if name == "torch" and "cpu" in (version.local or "") and tags & supported:
                found.append((version, wheel))
    return sorted(found, key=lambda item: item[0], reverse=True)


def torch_plan(setting: str, index_url: str, find_links: tuple[str, ...]) -> TorchPlan:
    """Return how CPU runtimes get torch under `runtimes.cpu_torch = setting`."""
    if setting == "none":
        return TorchPlan(check="no-torch", note="runtimes.cpu_torch is none: CPU runtimes never install torch")
    wheels = cpu_wheels(local_dirs(find_links))
    if setting == "auto":
        if wheels:
            version, wheel = wheels[0]
            return TorchPlan((f"torch=={version}",), note=f"torch's CPU build {version} from {wheel.parent}")
        return TorchPlan(extra_index_urls=(index_url,), check="cpu-build",
                         note=f"torch's CPU build from {index_url}")
    # only for a pinned setting, not at import: its parser costs every console start ~30 ms
    from packaging.requirements import Requirement

    pin = Requirement(setting)
    local = [(v, w) for v, w in wheels if pin.specifier.contains(v, prereleases=True)]
    if local:
        return TorchPlan((setting,), note=f"{setting}, its CPU build from {local[0][1].parent}")
    return TorchPlan((setting,), (index_url,), "cpu-build", f"{setting}, its CPU build from {index_url}")


def check_resolution(resolved: Iterable[tuple[str, str]], check: str) -> str:
    """Return why a CPU runtime must not install this resolution ("" when it may): CUDA torch, or torch at all."""
    for name, version in resolved:
        if canonicalize_name(name) != "torch":
            continue
        if check == "no-torch":
            return (f"the requirements need torch ({version}) and runtimes.cpu_torch is none, so this CPU runtime "
                    "installs no torch")
        if "cpu" not in (Version(version).local or ""):
            return (f"the requirements resolve to torch {version}, a CUDA build, on a CPU series: pin a CPU build "
                    "with runtimes.cpu_torch (e.g. torch==2.13.0+cpu) or runtimes.cpu_index_url")
    return ""
