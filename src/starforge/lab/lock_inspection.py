"""The state of an experiment's lock against the local catalog (recipes-and-locks §10): first rule that applies wins."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starforge import __version__
from starforge.recipes import UPGRADE_CLIENT, satisfies, too_old

from .experiments import exp_label
from .recipe_lock import (
    LOCK_FILE,
    binding_breaks,
    expected_lock,
    lock_diffs,
    normalise_lock,
    read_lock,
    read_method_file,
)

if TYPE_CHECKING:
    from starforge.recipes import Catalog, Recipe

__all__ = ["LABELS", "LockInspection", "inspect_lock"]

_IDENTITY = ("recipe.name", "framework.kind", "framework.runtime_id")
LABELS = {"current": "", "compatible": "drifted", "upgrade_advised": "behind", "incompatible": "incompatible",
          "runtime_removed": "runtime gone", "sdk_incompatible": "sdk mismatch", "malformed": "unreadable"}
_ADMITS = frozenset({"current", "compatible", "upgrade_advised"})


@dataclass(frozen=True)
class LockInspection:
    """The state of an experiment's lock against the local catalog, its diffs and the message to show."""

    state: str
    admits: bool
    diffs: list[tuple[str, str, str]]
    message: str
    label: str
    exp_dir: Path
    recipe_id: str = ""
    framework_version: str = ""
    lock: dict[str, Any] | None = field(default=None, repr=False)
    recipe: Recipe | None = field(default=None, repr=False, compare=False)
    legacy_method: str = ""  # the recipe a legacy method file names when there is no lock (`sf recipe upgrade` fixes it)

    def admits_under(self, strict: bool = False) -> bool:
        """Return whether a submission may proceed: v4 semantics, or only `current` with `strict` (§10.1)."""
        return self.state == "current" if strict else self.admits

    @property
    def strict_state(self) -> str:
        """Return the brief-era state (§10.1): any drift is `recipe_stale`."""
        return "recipe_stale" if self.state in ("incompatible", "upgrade_advised", "compatible") else self.state


def inspect_lock(exp_dir: Path, catalog: Catalog, client_version: str = __version__,
                 requested_recipe: str | None = None) -> LockInspection:
    """Return the lock's state (§10: malformed … current, first that applies), its diffs and the message."""
    exp_dir = Path(exp_dir)
    label = exp_label(exp_dir)

    def result(state: str, message: str, **extra: Any) -> LockInspection:
        return LockInspection(state, state in _ADMITS, extra.pop("diffs", []), message, LABELS[state], exp_dir,
                              **extra)

    lock, error = read_lock(exp_dir)
    if lock is None:
        legacy = read_method_file(exp_dir) if not (exp_dir / LOCK_FILE).exists() else ""
        if legacy:
            error += f" (the legacy method file names {legacy}; `sf recipe upgrade {label}` writes a lock)"
        return result("malformed", error, recipe_id=legacy, legacy_method=legacy)
    locked = normalise_lock(lock)
    name = locked["recipe.name"]
    if not name:
        return result("malformed", f"{LOCK_FILE} names no recipe", lock=lock)
    if requested_recipe is not None and requested_recipe.strip() != name:
        return result("malformed", f"the lock records {name}, not the requested {requested_recipe.strip()}",
                      recipe_id=name, lock=lock)
    recipe = catalog.get(name)
    if recipe is None:
        return result("malformed", f"recipe {name} is not in the local catalog", recipe_id=name, lock=lock)
    fv = locked["framework.version"] or recipe.default_version
    extra = {"recipe_id": name, "framework_version": fv, "lock": lock, "recipe": recipe}
    if satisfies(client_version, recipe.requires_core) is not True:
        action = UPGRADE_CLIENT if too_old(client_version, recipe.requires_core) else "use an sf client in that range"
        return result("sdk_incompatible", f"recipe {recipe.id}@{recipe.version} needs core {recipe.requires_core}; "
                                          f"this sf is {client_version} — {action}", **extra)
    if fv not in recipe.framework_versions:
        return result("runtime_removed",
                      f"{recipe.id} no longer has framework version {fv} (available: "
                      f"{', '.join(recipe.framework_versions)}); run `sf recipe upgrade {label} --framework-version "
                      f"<V>` or `--accept-runtime-change` for {recipe.default_version}", **extra)
    expected = normalise_lock(expected_lock(recipe, fv, exp_dir, core_version=client_version))
    diffs = lock_diffs(locked, expected)
    breaks = binding_breaks(locked, recipe, fv) + [
        f"{f} is {old or '(none)'} in the lock but {new or '(none)'} in the catalog"
        for f, old, new in diffs if f in _IDENTITY and old
    ]
    if breaks:
        return result("incompatible", "; ".join(breaks) + f" — run `sf recipe upgrade {label}`", diffs=diffs, **extra)
    variant = recipe.runtime.versions[fv]
    if variant.deprecated:
        sunset = f" (sunset {variant.sunset})" if variant.sunset else ""
        target = next((v for v, var in recipe.runtime.versions.items() if not var.deprecated), recipe.default_version)
        return result("upgrade_advised", f"{recipe.id} runtime {fv} is deprecated{sunset}; run `sf recipe upgrade "
                                         f"{label} --framework-version {target}`", diffs=diffs, **extra)
    if diffs:
        fields = ", ".join(f for f, _, _ in diffs)
        return result("compatible", f"the lock records an older bundle of {recipe.id} ({fields} differ); "
                                    f"run `sf recipe upgrade {label}` to record the installed one", diffs=diffs, **extra)
    return result("current", "", **extra)
