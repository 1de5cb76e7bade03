"""`sf recipe upgrade` as a library (§11): plan every experiment first, then write all locks or none."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starforge import __version__
from starforge.contract import Problem
from starforge.recipes import check_value, satisfies

from .exp_config import config_lookup, read_config
from .lock_inspection import LockInspection, inspect_lock
from .recipe_lock import (
    DIFF_FIELDS,
    LOCK_FILE,
    expected_lock,
    lock_diffs,
    lock_text,
    normalise_lock,
    read_method_file,
    write_lock,
)

if TYPE_CHECKING:
    from starforge.recipes import Catalog, Recipe

__all__ = ["UpgradeError", "UpgradePlan", "apply_upgrade", "plan_upgrade"]

_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_EMPTY = dict.fromkeys(DIFF_FIELDS, "")


class UpgradeError(RuntimeError):
    """Raised by `apply_upgrade` when a plan was refused (nothing written) or a write failed (rolled back)."""

    def __init__(self, message: str, plans: Sequence[UpgradePlan] = ()) -> None:
        self.plans = list(plans)
        super().__init__(message)


@dataclass(frozen=True)
class UpgradePlan:
    """What upgrading one experiment would do: the new lock and its diff, or why it is refused."""

    exp_dir: Path
    ok: bool
    state: str
    message: str
    inspection: LockInspection
    framework_version: str = ""
    lock: dict[str, Any] | None = field(default=None, repr=False)
    diffs: list[tuple[str, str, str]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Return True when writing the new lock would change the file."""
        if self.lock is None:
            return False
        try:
            return (self.exp_dir / LOCK_FILE).read_text(encoding="utf-8") != lock_text(self.lock)
        except OSError:
            return True


def _refused(inspection: LockInspection, state: str, message: str, **extra: Any) -> UpgradePlan:
    return UpgradePlan(inspection.exp_dir, False, state, message, inspection, **extra)


def _config_problems(recipe: Recipe, framework_version: str, exp_dir: Path) -> list[Problem]:
    """Check the values the experiment's own config.yaml sets at declared parameter paths (step 3, our rule)."""
    config = read_config(exp_dir, resolve=False)
    problems: list[Problem] = []
    for param in recipe.params.values():
        path = param.path_for(framework_version)
        found, value = config_lookup(config, path) if path else (False, None)
        if not found or value is None:
            continue
        if param.type == "float" and isinstance(value, str) and _FLOAT_TEXT.fullmatch(value.strip()):
            value = float(value)  # YAML 1.1 reads 5e-6 as a string; the frameworks read it as a number
        for problem in check_value(param, value, f"config.{path}"):
            problems.append(replace(problem, message=f"config.yaml {path}: {problem.message}"))  # data kept
    return problems


def plan_upgrade(exp_dir: Path, catalog: Catalog, client_version: str = __version__, *,
                 framework_version: str | None = None, accept_runtime_change: bool = False,
                 requested_recipe: str | None = None) -> UpgradePlan:
    """Return the plan of upgrading one experiment's lock to the local catalog (§11 steps 1-4); writes nothing."""
    exp_dir = Path(exp_dir)
    inspection = inspect_lock(exp_dir, catalog, client_version, requested_recipe)
    recipe = inspection.recipe
    old = normalise_lock(inspection.lock) if inspection.lock is not None else dict(_EMPTY, bindings=None)
    legacy = read_method_file(exp_dir) if inspection.lock is None and not (exp_dir / LOCK_FILE).exists() else ""
    if recipe is None and legacy:
        recipe = catalog.get(legacy)  # no lock yet: the legacy `method` file names the recipe
        if recipe is not None and satisfies(client_version, recipe.requires_core) is not True:
            return _refused(inspection, "sdk_incompatible", f"recipe {recipe.id}@{recipe.version} needs core "
                                                            f"{recipe.requires_core}; this sf is {client_version}")
    if recipe is None or inspection.state == "sdk_incompatible":
        return _refused(inspection, inspection.state, inspection.message)
    if framework_version:
        version = framework_version.strip()
    elif inspection.state == "runtime_removed":
        if not accept_runtime_change:
            return _refused(inspection, inspection.state, inspection.message)
        version = recipe.default_version
    else:
        version = inspection.framework_version or recipe.default_version
    if version not in recipe.framework_versions:
        return _refused(inspection, inspection.state,
                        f"{recipe.id} has no framework version {version} (available: "
                        f"{', '.join(recipe.framework_versions)})", framework_version=version)
    problems = _config_problems(recipe, version, exp_dir)
    if problems:
        return _refused(inspection, "incompatible",
                        f"the experiment's config.yaml does not validate against {recipe.id}@{recipe.version}",
                        framework_version=version, problems=problems)
    lock = expected_lock(recipe, version, exp_dir, core_version=client_version)
    diffs = lock_diffs(old, normalise_lock(lock))
    return UpgradePlan(exp_dir, True, inspection.state, "", inspection, version, lock, diffs)


def apply_upgrade(plans: Sequence[UpgradePlan]) -> list[Path]:
    """Write every changed lock, or none: refuse if any plan failed; on a write failure restore what was written."""
    refused = [p for p in plans if not p.ok]
    if refused:
        raise UpgradeError(f"{len(refused)} experiment(s) cannot be upgraded; nothing was written", refused)
    written: list[tuple[Path, bytes | None]] = []
    try:
        for plan in plans:
            if not plan.changed or plan.lock is None:
                continue
            file = plan.exp_dir / LOCK_FILE
            previous = file.read_bytes() if file.exists() else None
            write_lock(plan.exp_dir, plan.lock)
            written.append((file, previous))
    except OSError as exc:
        for file, previous in reversed(written):
            if previous is None:
                file.unlink(missing_ok=True)
            else:
                file.write_bytes(previous)
        raise UpgradeError(f"writing the locks failed ({exc}); the {len(written)} lock(s) already written were "
                           "restored") from exc
    return [file for file, _ in written]
