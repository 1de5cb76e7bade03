"""The user's lab: discovery (`starforge.yaml`), scaffolding, experiments and their `config.yaml`, recipe locks and
their upgrades, provenance and the files to pack.

Everything beyond discovery (`build_jobspec`, `create_experiment`, `init_lab`, …) is loaded on
first access, so `import starforge.lab` stays cheap: `sf validate` never pays for the recipe or bundle code it
does not run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .discovery import LAB_FILE, LabNotFound, find_root, find_root_or_none

if TYPE_CHECKING:
    from .catalog import client_catalog
    from .create import NewExperiment, create_experiment, default_method
    from .exp_config import config_lookup, read_config
    from .experiments import current_experiment, exp_label, locked_experiments, resolve_experiment
    from .handshake import HandshakeReport, check_handshake
    from .jobspec import BuiltSpec, SubmitOptions, build_jobspec
    from .listing import ExperimentRow, list_experiments
    from .lock_inspection import LABELS, LockInspection, inspect_lock
    from .lockgate import LOCK_FIELD, lock_gate
    from .package import SPEC_FILE, Packed, pack_submission, write_spec_file
    from .paths import experiment_path
    from .plugins_lock import read_plugins_lock, select_plugins
    from .profiles_cache import load_registry, offline_registry, save_registry
    from .project import project_name
    from .provenance import GitProvenance, ProvenanceError, config_sha, git_provenance, lab_dirtied_by
    from .recipe_lock import (
        LOCK_FILE,
        LOCK_V4,
        expected_lock,
        lock_diffs,
        normalise_lock,
        read_lock,
        write_lock,
    )
    from .scaffold import LabExists, ScaffoldError, init_lab
    from .submission import Submission, Sweep, at_point, build_submission
    from .upgrade import UpgradeError, UpgradePlan, apply_upgrade, plan_upgrade
    from .validation import Validation, validate_experiment

_LAZY = {
    "client_catalog": "catalog",
    "NewExperiment": "create",
    "create_experiment": "create",
    "default_method": "create",
    "config_lookup": "exp_config",
    "read_config": "exp_config",
    "current_experiment": "experiments",
    "exp_label": "experiments",
    "locked_experiments": "experiments",
    "resolve_experiment": "experiments",
    "HandshakeReport": "handshake",
    "check_handshake": "handshake",
    "BuiltSpec": "jobspec",
    "SubmitOptions": "jobspec",
    "build_jobspec": "jobspec",
    "experiment_path": "paths",
    "ExperimentRow": "listing",
    "list_experiments": "listing",
    "LABELS": "lock_inspection",
    "LockInspection": "lock_inspection",
    "inspect_lock": "lock_inspection",
    "LOCK_FIELD": "lockgate",
    "lock_gate": "lockgate",
    "SPEC_FILE": "package",
    "Packed": "package",
    "pack_submission": "package",
    "write_spec_file": "package",
    "read_plugins_lock": "plugins_lock",
    "select_plugins": "plugins_lock",
    "load_registry": "profiles_cache",
    "offline_registry": "profiles_cache",
    "save_registry": "profiles_cache",
    "project_name": "project",
    "GitProvenance": "provenance",
    "ProvenanceError": "provenance",
    "config_sha": "provenance",
    "git_provenance": "provenance",
    "lab_dirtied_by": "provenance",
    "LOCK_FILE": "recipe_lock",
    "LOCK_V4": "recipe_lock",
    "expected_lock": "recipe_lock",
    "lock_diffs": "recipe_lock",
    "normalise_lock": "recipe_lock",
    "read_lock": "recipe_lock",
    "write_lock": "recipe_lock",
    "LabExists": "scaffold",
    "ScaffoldError": "scaffold",
    "init_lab": "scaffold",
    "Submission": "submission",
    "Sweep": "submission",
    "at_point": "submission",
    "build_submission": "submission",
    "UpgradeError": "upgrade",
    "UpgradePlan": "upgrade",
    "apply_upgrade": "upgrade",
    "plan_upgrade": "upgrade",
    "Validation": "validation",
    "validate_experiment": "validation",
}

__all__ = [
    "LABELS",
    "LAB_FILE",
    "LOCK_FIELD",
    "LOCK_FILE",
    "LOCK_V4",
    "SPEC_FILE",
    "BuiltSpec",
    "ExperimentRow",
    "GitProvenance",
    "HandshakeReport",
    "LabExists",
    "LabNotFound",
    "LockInspection",
    "NewExperiment",
    "Packed",
    "ProvenanceError",
    "ScaffoldError",
    "Submission",
    "Sweep",
    "SubmitOptions",
    "UpgradeError",
    "UpgradePlan",
    "Validation",
    "apply_upgrade",
    "build_jobspec",
    "at_point",
    "build_submission",
    "check_handshake",
    "client_catalog",
    "config_lookup",
    "config_sha",
    "create_experiment",
    "current_experiment",
    "default_method",
    "exp_label",
    "expected_lock",
    "experiment_path",
    "find_root",
    "find_root_or_none",
    "git_provenance",
    "lab_dirtied_by",
    "init_lab",
    "inspect_lock",
    "list_experiments",
    "load_registry",
    "lock_diffs",
    "lock_gate",
    "locked_experiments",
    "normalise_lock",
    "offline_registry",
    "pack_submission",
    "plan_upgrade",
    "project_name",
    "read_config",
    "read_lock",
    "read_plugins_lock",
    "resolve_experiment",
    "save_registry",
    "select_plugins",
    "validate_experiment",
    "write_lock",
    "write_spec_file",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
