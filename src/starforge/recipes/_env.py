"""Where recipes live on this machine: `FORGE_HOME` and `FORGE_RECIPE_PATH`, read in this one place."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["BUILTIN_ROOT", "cache_dir", "forge_home", "overlay_roots"]

BUILTIN_ROOT = Path(__file__).resolve().parent / "builtin"


def forge_home() -> Path:
    """Return the client state directory: `$FORGE_HOME`, default `~/.forge`."""
    return Path(os.environ.get("FORGE_HOME") or "~/.forge").expanduser()


def cache_dir() -> Path:
    """Return the directory of the recipe digest and validation cache (`$FORGE_HOME/cache/recipes`)."""
    return forge_home() / "cache" / "recipes"


def overlay_roots() -> list[Path]:
    """Return the overlay roots in load order: each `FORGE_RECIPE_PATH` entry, then `$FORGE_HOME/recipes`."""
    roots = [Path(p).expanduser() for p in os.environ.get("FORGE_RECIPE_PATH", "").split(os.pathsep) if p.strip()]
    roots.append(forge_home() / "recipes")
    return roots
