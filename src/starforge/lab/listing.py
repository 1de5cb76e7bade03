"""`sf ls`: the lab's experiments with their recipe, framework version and lock label (recipes-and-locks §10)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starforge import __version__

if TYPE_CHECKING:
    from starforge.recipes import Catalog

__all__ = ["ExperimentRow", "list_experiments"]

_PARENTS = ("experiments", "smoke")


@dataclass(frozen=True)
class ExperimentRow:
    """One experiment: how to name it, its lab-relative path, recipe, framework version and lock state."""

    name: str
    exp: str
    recipe: str
    framework_version: str
    state: str
    label: str  # the §10 display label: "" for current, drifted, behind, incompatible, runtime gone, …
    admits: bool
    message: str

    def to_dict(self) -> dict[str, Any]:
        """Return the `--json` form."""
        return asdict(self)


def list_experiments(root: Path, catalog: Catalog) -> list[ExperimentRow]:
    """Return every experiment folder under `experiments/` then `smoke/`, each sorted by name, with its lock state."""
    from .lock_inspection import inspect_lock

    rows: list[ExperimentRow] = []
    for parent in _PARENTS:
        base = Path(root) / parent
        if not base.is_dir():
            continue
        for exp_dir in sorted(d for d in base.iterdir() if d.is_dir() and not d.name.startswith(".")):
            item = inspect_lock(exp_dir, catalog, __version__)
            name = exp_dir.name if parent == "experiments" else f"{parent}/{exp_dir.name}"
            rows.append(ExperimentRow(name, f"{parent}/{exp_dir.name}", item.recipe_id, item.framework_version,
                                      item.state, item.label, item.admits, item.message))
    return rows
