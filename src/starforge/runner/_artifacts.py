"""Artifact discovery: match globs under the output directory and describe each match (kind, step, format, size)."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FoundArtifact", "scan", "size_of", "step_of"]

# `step_5`, `step-5`, `global_step_5`, `checkpoint-5` (Hugging Face's trainers); not `mystep_5` and not the
# `step_5` inside `step_50`.
_STEP = re.compile(r"(?<![A-Za-z0-9])(?:step|checkpoint)[_-]([0-9]+)(?![0-9])")


@dataclass(frozen=True, slots=True)
class FoundArtifact:
    """One artifact found on disk: its kind, absolute path, format, training step and size when known."""

    kind: str
    path: str
    format: str = ""
    step: int | None = None
    size_bytes: int | None = None

    def fields(self) -> dict[str, Any]:
        """Return the optional wire fields (`format`, `step`, `size_bytes`) that are known."""
        out: dict[str, Any] = {"format": self.format}
        if self.step is not None:
            out["step"] = self.step
        if self.size_bytes is not None:
            out["size_bytes"] = self.size_bytes
        return out


def step_of(relative_path: str) -> int | None:
    """Return N from the last path component named like `step_<N>`, `step-<N>` or `checkpoint-<N>`, or None."""
    for part in reversed(Path(relative_path).parts):
        match = _STEP.search(part)
        if match:
            return int(match.group(1))
    return None


def size_of(path: str | os.PathLike[str]) -> int | None:
    """Return the size in bytes of a file, or the total of the regular files under a directory; None if absent."""
    try:
        if os.path.isfile(path):
            return os.path.getsize(path)
        if not os.path.isdir(path):
            return None
        total = 0
        for root, _dirs, files in os.walk(path):
            for name in files:
                try:
                    total += os.path.getsize(os.path.join(root, name))
                except OSError:
                    continue  # a broken link or a file removed while walking
        return total
    except OSError:
        return None


def scan(
    out_dir: str | os.PathLike[str],
    groups: Sequence[tuple[str, Sequence[str]]],
    formats: Mapping[str, str],
) -> list[FoundArtifact]:
    """Return the artifacts matched by each `(kind, globs)` group under `out_dir`, in group order, each path once.

    Within a kind, matches are ordered by step (matches without a step last), then by path.
    """
    root = os.path.abspath(out_dir)
    if not os.path.isdir(root):
        return []
    seen: set[str] = set()
    found: list[FoundArtifact] = []
    for kind, patterns in groups:
        matches: list[FoundArtifact] = []
        for pattern in patterns:
            for relative in glob.glob(pattern, root_dir=root, recursive=True):
                path = os.path.normpath(os.path.join(root, relative))
                if path in seen:
                    continue
                seen.add(path)
                matches.append(
                    FoundArtifact(kind, path, formats.get(kind, ""), step_of(relative), size_of(path))
                )
        matches.sort(key=lambda a: (a.step is None, a.step or 0, a.path))
        found.extend(matches)
    return found
