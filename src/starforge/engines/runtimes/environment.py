"""What the console's own interpreter provides: its installed distributions and the modules it can import.

A runtime whose requirements this environment already satisfies (say `numpy>=1.24` for tinyrl) runs on the
console's interpreter without a build. The check follows each requirement through the dependencies the installed
distributions declare, with their markers and extras; on a GPU series a CPU build of torch does not satisfy it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:
    from packaging.requirements import Requirement

__all__ = ["ConsoleEnvironment", "console_environment", "is_cpu_torch"]


def is_cpu_torch(version: str, files: Iterable[str] = ()) -> bool:
    """Return True for a CPU build of torch: a `+cpu` local version, or no CUDA library among its files."""
    try:
        local = Version(version).local or ""
    except InvalidVersion:
        local = ""
    if "cpu" in local:
        return True
    if local.startswith(("cu", "rocm")):
        return False
    return not any("libtorch_cuda" in name or "libc10_cuda" in name for name in files)


class ConsoleEnvironment:
    """The console interpreter's distributions (read once) and module lookups (cached)."""

    def __init__(self, distributions: Iterable[importlib.metadata.Distribution] | None = None) -> None:
        found = importlib.metadata.distributions() if distributions is None else distributions
        self._dists: dict[str, importlib.metadata.Distribution] = {}
        for dist in found:
            name = dist.metadata["Name"]
            if name:
                self._dists.setdefault(canonicalize_name(name), dist)
        self._modules: dict[str, bool] = {}
        self._lock = threading.Lock()

    def version(self, name: str) -> str | None:
        """Return the installed version of distribution `name`, or None."""
        dist = self._dists.get(canonicalize_name(name))
        return dist.version if dist is not None else None

    def importable(self, module: str) -> bool:
        """Return True when the console's interpreter can import the top-level package of `module`."""
        top = module.split(".", 1)[0]
        with self._lock:
            if top not in self._modules:
                try:
                    self._modules[top] = importlib.util.find_spec(top) is not None
                except (ImportError, ValueError):
                    self._modules[top] = False
            return self._modules[top]

    def missing(self, requirements: Iterable[str], *, gpu: bool = False) -> list[str]:
        """Return the requirements (or dependencies of theirs) this environment lacks; [] when it satisfies them."""
        out: list[str] = []
        seen: set[tuple[str, frozenset[str]]] = set()
        for text in requirements:
            self._visit(text, frozenset(), gpu, seen, out)
        return out

    def _visit(self, text: str, extras: frozenset[str], gpu: bool, seen: set[tuple[str, frozenset[str]]],
               out: list[str]) -> None:
        # here, not at import: its parser costs every console start ~30 ms
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            req = Requirement(text)
        except InvalidRequirement:
            out.append(text)
            return
        if req.marker is not None and not _marker_holds(req, extras):
            return
        if req.url:
            out.append(text)  # a direct reference (path, URL) is never assumed to be what is installed
            return
        key = canonicalize_name(req.name)
        dist = self._dists.get(key)
        if dist is None or not req.specifier.contains(dist.version, prereleases=True):
            out.append(text)
            return
        if gpu and key == "torch" and is_cpu_torch(dist.version, (str(f) for f in dist.files or ())):
            out.append(f"{text} (the console's torch {dist.version} is a CPU build)")
            return
        wanted = frozenset(canonicalize_name(e) for e in req.extras)
        if (key, wanted) in seen:
            return
        seen.add((key, wanted))
        for dependency in dist.requires or ():
            self._visit(dependency, wanted, gpu, seen, out)


def _marker_holds(req: Requirement, extras: frozenset[str]) -> bool:
    assert req.marker is not None
    if not extras:
        return req.marker.evaluate({"extra": ""})
    return any(req.marker.evaluate({"extra": extra}) for extra in extras)


@functools.cache
def console_environment() -> ConsoleEnvironment:
    """Return the environment of this process's interpreter, read once."""
    return ConsoleEnvironment()
