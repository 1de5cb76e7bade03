"""Where recipes live on this machine: the built-in tree, `FORGE_RECIPE_PATH` (read here only) and `$FORGE_HOME`."""

from __future__ import annotations

import os
from pathlib import Path

from starforge.home import forge_home

__all__ = ["BUILTIN_ROOT", "INTERNAL_ROOT", "cache_dir", "overlay_roots"]

BUILTIN_ROOT = Path(__file__).resolve().parent / "builtin"
INTERNAL_ROOT = Path(__file__).resolve().parent / "internal"  # the console's own recipes (serving/*), never listed


def cache_dir() -> Path:
    """Return the directory of the recipe digest and validation cache (`$FORGE_HOME/cache/recipes`)."""
    return forge_home() / "cache" / "recipes"


def overlay_roots() -> list[Path]:
    """Return the overlay roots in load order: each `FORGE_RECIPE_PATH` entry, then `$FORGE_HOME/recipes`."""
    roots = [Path(p).expanduser() for p in os.environ.get("FORGE_RECIPE_PATH", "").split(os.pathsep) if p.strip()]
    roots.append(forge_home() / "recipes")
    return roots
