"""Shared steps of the lab commands: find the lab root and load the client's catalog, aborting cleanly."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from starforge.cli._output import EXIT_REFUSED, EXIT_USAGE, Output

if TYPE_CHECKING:
    from starforge.recipes import Catalog

__all__ = ["lab_root", "load_catalog_or_abort"]


def lab_root(out: Output) -> Path:
    """Return the enclosing lab root, or exit 2 with a hint to run inside a lab or create one."""
    from starforge.lab import LabNotFound, find_root

    try:
        return find_root()
    except LabNotFound as exc:
        out.abort(str(exc), hint="run it inside a lab, or `sf init my-lab` to create one", code=EXIT_USAGE)


def load_catalog_or_abort(out: Output, path: str | None) -> Catalog:
    """Return the client's catalog (builtin plus overlays, or the tree at `path`); exit 1 or 2 when it is invalid."""
    from starforge.lab import client_catalog
    from starforge.recipes import CatalogError

    try:
        return client_catalog(path)
    except CatalogError as exc:
        out.abort(str(exc), hint="fix the manifests listed above", code=EXIT_REFUSED)
    except ValueError as exc:
        out.abort(str(exc), code=EXIT_USAGE)
