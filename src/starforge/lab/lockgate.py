"""The lock gate of every submission (recipes-and-locks §10-§11): refused states become problems, advisories warnings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from starforge.contract import Problem

if TYPE_CHECKING:
    from starforge.recipes import LockInspection

__all__ = ["LOCK_FIELD", "exp_label", "lock_gate"]

LOCK_FIELD = "recipe.lock.json"


def exp_label(exp_dir: Path) -> str:
    """Return how commands name an experiment: `<name>`, or `smoke/<name>` for a smoke experiment."""
    return f"smoke/{exp_dir.name}" if exp_dir.parent.name == "smoke" else exp_dir.name


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
                        "upgrade sf (pip install -U starforge) to a version the recipe supports")], []
    if state == "runtime_removed":
        return [Problem(LOCK_FIELD, "framework_version_unsupported", message,
                        f"run `sf recipe upgrade {label} --framework-version <V>` (or --accept-runtime-change)")], []
    if state == "incompatible":
        return [Problem(LOCK_FIELD, "lock_incompatible", message, upgrade)], []
    hint = (upgrade + " to write a lock from the legacy method file") if "legacy" in message else (
        f"`sf recipe status {label}` shows the lock; recreate the experiment with `sf new` if it is lost")
    return [Problem(LOCK_FIELD, "lock_unreadable", message or "the lock cannot be used", hint)], []
