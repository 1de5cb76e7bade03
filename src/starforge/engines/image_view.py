"""How the sandbox shows an image as the job's root: the image's top-level entries read-only in place of the
machine's system folders, and the machine's `setpriv` brought in with its own loader (an image need not have one).

Folders of the image that hold a path the sandbox mounts (the runtime's interpreter under /root or /opt, /forge)
are rebuilt one level down: their other entries are bound one by one, so every mount finds a writable parent.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

__all__ = ["HOST_TOOLS", "host_setpriv", "image_root_args"]

HOST_TOOLS = "/forge/.host"  # where the machine's setpriv, its loader and its libraries are shown (read-only)
_NOT_SHOWN = frozenset({"proc", "dev", "sys", "tmp", "run"})  # given by the sandbox itself, or never shown
_LIBRARY = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)")


def _entry_args(source: Path, target: str) -> list[str]:
    if source.is_symlink():
        return ["--symlink", os.readlink(source), target]
    if source.is_dir():
        return ["--ro-bind", str(source), target]
    if source.is_file():
        return ["--ro-bind", str(source), target]
    return []


def _tree_args(source: Path, target: str, holders: set[str], created: set[str]) -> list[str]:
    args = ["--perms", "0755", "--dir", target] if target != "/" else []
    created.add(target)
    try:
        names = sorted(os.listdir(source))
    except OSError:
        return args
    for name in names:
        if target == "/" and name in _NOT_SHOWN:
            continue
        child, inner = source / name, f"{target.rstrip('/')}/{name}"
        if inner in holders and child.is_dir() and not child.is_symlink():
            args += _tree_args(child, inner, holders, created)
        elif inner not in holders:
            args += _entry_args(child, inner)
    return args


def image_root_args(root: Path, targets: list[str]) -> tuple[list[str], set[str]]:
    """Return bubblewrap's options that show the image at `root` as `/`, leaving every folder on the way to one of
    `targets` writable for its mount, and the folders those options create."""
    holders: set[str] = set()
    for target in targets:
        parts = Path(target).parts[1:-1]
        for depth in range(1, len(parts) + 1):
            holders.add("/" + "/".join(parts[:depth]))
    created: set[str] = set()
    return _tree_args(root, "/", holders, created), created


@lru_cache(maxsize=1)
def host_setpriv() -> tuple[tuple[tuple[Path, str], ...], tuple[str, ...]]:
    """Return the read-only mounts (source, job path) and the command prefix that run this machine's `setpriv`
    inside any image: through its own dynamic loader and libraries under HOST_TOOLS."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return (), ("setpriv",)
    real = Path(setpriv).resolve()
    try:
        listed = subprocess.run(["ldd", str(real)], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        listed = ""
    libraries = [Path(m.group(1)) for m in _LIBRARY.finditer(listed)]
    loader = next((lib for lib in libraries if "ld-linux" in lib.name or lib.name.startswith("ld-")), None)
    if loader is None:  # a static setpriv, or no ldd: run it as it is
        return ((real, f"{HOST_TOOLS}/setpriv"),), (f"{HOST_TOOLS}/setpriv",)
    mounts = [(real, f"{HOST_TOOLS}/setpriv"), (loader.resolve(), f"{HOST_TOOLS}/ld.so")]
    mounts += [(lib.resolve(), f"{HOST_TOOLS}/lib/{lib.name}") for lib in libraries if lib != loader]
    return tuple(mounts), (f"{HOST_TOOLS}/ld.so", "--library-path", f"{HOST_TOOLS}/lib", f"{HOST_TOOLS}/setpriv")
