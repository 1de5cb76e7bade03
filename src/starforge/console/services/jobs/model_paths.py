"""Cluster-path base models: `spec.model.base` may name a folder of the console machine only under `model_roots`.

A hub id (`Qwen/Qwen3-8B`) is not a path and is never looked up here. A cluster path (absolute, see
`starforge.contract.is_cluster_path`) is authorised when, with every symbolic link resolved, it is a folder inside
one of the operator's `model_roots` and neither inside nor around the console's state folder. Admission refuses
anything else at `spec.model.base`; the launch asks again and mounts the folder read-only, bound to its root.

Tier: query (reads the filesystem only; never touches the database).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ModelFolder", "resolve_model_folder"]


@dataclass(frozen=True)
class ModelFolder:
    """The answer for one cluster path: its real folder and the root holding it, or why it is refused."""

    path: str = ""
    root: str = ""
    refusal: str = ""

    @property
    def ok(self) -> bool:
        """Return True when the folder may be shown to jobs."""
        return not self.refusal


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def resolve_model_folder(base: str, roots: Sequence[str], state_dir: Path) -> ModelFolder:
    """Return where the cluster path `base` really is, if it is a folder inside one of `roots`; else the refusal."""
    if not roots:
        return ModelFolder(refusal="this console does not serve base models from its own folders (no model_roots)")
    try:
        real = os.path.realpath(base)
        state = os.path.realpath(state_dir)
        real_roots = [os.path.realpath(root) for root in roots]
    except (OSError, ValueError):  # a NUL byte, an unreadable parent
        return ModelFolder(refusal=f"{base[:200]!r} is not a usable path")
    root = next((r for r in real_roots if _inside(real, r)), None)
    if root is None:
        return ModelFolder(refusal=f"{base[:200]} is not inside the console's model_roots")
    if _inside(real, state) or _inside(state, real):
        return ModelFolder(refusal=f"{base[:200]} overlaps the console's state folder")
    if not os.path.isdir(real):
        return ModelFolder(refusal=f"{base[:200]} is not a folder on the console machine")
    return ModelFolder(path=real, root=root)
