"""The client's installed recipe catalog: the built-in tree with overlays, or one tree named by `--catalog`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starforge.recipes import Catalog

__all__ = ["client_catalog"]


def client_catalog(path: str | Path | None = None) -> Catalog:
    """Return the catalog this client builds specs from: the built-in one (with overlays), or exactly `path`.

    A tree given by path stands in for the installed catalog, so it is published for this client's own version
    and the built-in core range (unlike `sf spec check --catalog`, which reads a tree as the official client's).
    Raises ValueError for a path that is not a directory and `CatalogError` for invalid manifests.
    """
    from starforge import __version__
    from starforge.recipes import BUILTIN_CORE_REQUIREMENT, load_catalog

    if path is None or str(path) == "":
        return load_catalog()
    tree = Path(path).expanduser()
    if not tree.is_dir():
        raise ValueError(f"no recipe tree at {path}: expected a directory of <framework>/<name>/recipe.yaml")
    return load_catalog(tree, overlays=False, core_version=__version__, core_requirement=BUILTIN_CORE_REQUIREMENT)
