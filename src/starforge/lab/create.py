"""`sf new`: create an experiment from a recipe template or another experiment, with a fresh v4 lock, atomically."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from starforge.bundle import find_secret
from starforge.contract import Problem, is_safe_segment

if TYPE_CHECKING:
    from starforge.recipes import Catalog, Recipe

__all__ = ["NewExperiment", "create_experiment", "default_method"]

_PARENTS = ("experiments", "smoke")
_NEVER_COPIED = frozenset({"recipe.lock.json", "recipe.lock.json.tmp", ".starforge", "__pycache__", ".git"})


@dataclass(frozen=True)
class NewExperiment:
    """The created experiment (None on problems), its lab-relative path, recipe, framework version and origin."""

    path: Path | None
    exp: str = ""
    recipe: str = ""
    framework_version: str = ""
    source: str = ""  # "template <recipe id>" or the experiment it was copied from
    problems: list[Problem] = field(default_factory=list)


def default_method(root: Path, catalog: Catalog) -> str:
    """Return the recipe `sf new` uses without --method: the one every locked experiment shares, else the
    catalog's first recipe in product order (`nemo-rl/grpo` for the built-in catalog)."""
    from .experiments import locked_experiments
    from .lock_inspection import inspect_lock

    used = {inspect_lock(d, catalog).recipe_id for d in locked_experiments(Path(root))} - {""}
    if len(used) == 1:
        only = next(iter(used))
        if catalog.get(only) is not None:
            return only
    return catalog.recipes[0].id if len(catalog) else ""


def _target(root: Path, name: str) -> tuple[Path | None, list[Problem]]:
    text = name.strip().strip("/")
    parent, _, base = text.rpartition("/")
    parent = parent or "experiments"
    if parent not in _PARENTS or not is_safe_segment(base):
        return None, [Problem("name", "not_a_safe_segment",
                              f"{name!r} is not an experiment name: use letters, digits, '.', '_' and '-' "
                              "(optionally under smoke/)", "e.g. sf new my-grpo")]
    target = Path(root) / parent / base
    if os.path.lexists(target):
        return None, [Problem("name", "experiment_exists", f"{parent}/{base} already exists",
                              "pick another name, or `--from` it to start a variant")]
    return target, []


def _ignore(copying_experiment: bool) -> Callable[[str, list[str]], set[str]]:
    def ignore(directory: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in _NEVER_COPIED or n.endswith(".pyc")}
        if copying_experiment:  # a copy never carries the source's secrets along (by name or content)
            skipped |= {n for n in names if n not in skipped and find_secret(n, Path(directory) / n) is not None}
        return skipped

    return ignore


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _materialise(source: Path, target: Path, recipe: Recipe, framework_version: str, from_experiment: bool) -> None:
    """Build the experiment in a temporary folder beside `target`, write its lock, then rename it into place."""
    from .recipe_lock import expected_lock, write_lock

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".new", dir=target.parent))
    try:
        os.chmod(staging, 0o777 & ~_umask())
        shutil.copytree(source, staging, dirs_exist_ok=True, ignore=_ignore(from_experiment))
        write_lock(staging, expected_lock(recipe, framework_version, staging))
        if os.path.lexists(target):
            raise FileExistsError(f"{target} appeared while it was being created")
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def create_experiment(root: Path, name: str, catalog: Catalog, *, method: str = "", source: str = "",
                      framework_version: str = "") -> NewExperiment:
    """Create `experiments/<name>` from `method`'s template (or a copy of experiment `source`) with a v4 lock.

    The lock is written with `expected_lock` at `framework_version` (default: the source's locked version, else
    the recipe's default). Nothing is left behind on failure; an existing name is refused. Filesystem failures
    raise OSError; every user-input problem is returned.
    """
    from .experiments import resolve_experiment
    from .lock_inspection import inspect_lock

    root = Path(root)
    target, problems = _target(root, name)
    recipe: Recipe | None = None
    origin: Path | None = None
    locked_version = ""
    label = ""
    if source.strip():
        found = resolve_experiment(root, source)
        if found is None or not (found / "recipe.lock.json").is_file():
            problems.append(Problem("--from", "experiment_unknown", f"no experiment {source!r} with a recipe.lock.json",
                                    "`sf ls` lists the lab's experiments"))
        else:
            inspection = inspect_lock(found, catalog)
            if inspection.recipe is None:
                problems.append(Problem("--from", "lock_unreadable", f"{source}: {inspection.message}",
                                        f"`sf recipe status {found.name}` shows why"))
            else:
                recipe, origin, locked_version = inspection.recipe, found, inspection.framework_version
                label = found.relative_to(root.resolve()).as_posix() if found.is_relative_to(root.resolve()) else str(found)
                if method.strip() and method.strip() != recipe.id:
                    problems.append(Problem("--method", "recipe_unknown",
                                            f"--from {source} uses {recipe.id}; it cannot become {method.strip()}",
                                            "drop --method, or create from the template with --method alone"))
    else:
        wanted = method.strip() or default_method(root, catalog)
        recipe, lookup = catalog.lookup(wanted, field="--method")
        problems += lookup
        if recipe is not None:
            origin, label = recipe.template_dir, f"template {recipe.id}"
    version = framework_version.strip() or locked_version or (recipe.default_version if recipe else "")
    if recipe is not None and version not in recipe.framework_versions:
        problems.append(Problem("--framework-version", "framework_version_unsupported",
                                f"{recipe.id} has no framework version {version} "
                                f"(published: {', '.join(recipe.framework_versions)})",
                                f"use one of {', '.join(recipe.framework_versions)}"))
    if problems or target is None or recipe is None or origin is None:
        return NewExperiment(None, problems=problems)
    _materialise(origin, target, recipe, version, from_experiment=bool(source.strip()))
    return NewExperiment(target, target.relative_to(root).as_posix(), recipe.id, version, label)
