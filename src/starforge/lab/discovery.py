"""Find the lab root: `SF_REPO_ROOT`, else the nearest directory upwards holding `starforge.yaml`."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["LAB_FILE", "LabNotFound", "find_root", "find_root_or_none"]

LAB_FILE = "starforge.yaml"


class LabNotFound(LookupError):
    """Raised when no lab encloses the working directory."""


def find_root_or_none(start: Path | None = None) -> Path | None:
    """Return the lab root enclosing `start` (default: the working directory), or None."""
    override = os.environ.get("SF_REPO_ROOT")
    if override:
        root = Path(override).expanduser().resolve()
        return root if (root / LAB_FILE).is_file() else None
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / LAB_FILE).is_file():
            return candidate
    return None


def find_root(start: Path | None = None) -> Path:
    """Return the lab root enclosing `start`, or raise `LabNotFound` with a hint to run `sf init`."""
    root = find_root_or_none(start)
    if root is None:
        raise LabNotFound("no starforge.yaml in this directory or any parent (run `sf init` to create a lab)")
    return root
