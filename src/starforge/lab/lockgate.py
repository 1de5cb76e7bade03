"""The lock gate of every submission (recipes-and-locks §10-§11): refused states become problems, advisories warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starforge import DISTRIBUTION
from starforge.contract import Problem

from .experiments import exp_label  # re-exported: how commands name an experiment

if TYPE_CHECKING:
    from .lock_inspection import LockInspection

__all__ = ["LOCK_FIELD", "exp_label", "lock_gate"]

LOCK_FIELD = "recipe.lock.json"


def lock_gate(inspection: LockInspection) -> tuple[list[Problem], list[Problem]]:
    """Return `(problems, warnings)` of a lock inspection: a refusing state is one problem, an advisory one warning."""
    state, message = inspection.state, inspection.message
    label = exp_label(inspection.exp_dir)
    upgrade = f"run `sf recipe upgrade {label}`"
    if state == "current":
        return [], []
    if state == "compatible":
        return [], [Problem(LOCK_FIELD, "lock_drifted", message, upgrade + " to record the installed bundle")]
    if state == "upgrade_advised":
        return [], [Problem(LOCK_FIELD, "runtime_deprecated", message, upgrade + " with a supported --framework-version")]
    if state == "sdk_incompatible":
        return [Problem(LOCK_FIELD, "core_version_incompatible", message,
                        f"upgrade sf (pip install -U {DISTRIBUTION}) to a version the recipe supports")], []
    if state == "runtime_removed":
        return [Problem(LOCK_FIELD, "framework_version_unsupported", message,
                        f"run `sf recipe upgrade {label} --framework-version <V>` (or --accept-runtime-change)")], []
    if state == "incompatible":
        return [Problem(LOCK_FIELD, "lock_incompatible", message, upgrade)], []
    hint = (upgrade + " to write a lock from the legacy method file") if inspection.legacy_method else (
        f"`sf recipe status {label}` shows the lock; recreate the experiment with `sf new` if it is lost")
    return [Problem(LOCK_FIELD, "lock_unreadable", message or "the lock cannot be used", hint)], []
