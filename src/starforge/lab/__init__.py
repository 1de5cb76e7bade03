"""The user's lab: discovery (`starforge.yaml`), scaffolding, experiments, locks, provenance and the files to pack.

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
    from .handshake import HandshakeReport, check_handshake
    from .jobspec import BuiltSpec, SubmitOptions, build_jobspec
    from .listing import ExperimentRow, list_experiments
    from .lockgate import LOCK_FIELD, exp_label, lock_gate
    from .package import SPEC_ARCNAME, Packed, pack_submission, write_spec_file
    from .paths import experiment_path
    from .plugins_lock import read_plugins_lock, select_plugins
    from .profiles_cache import load_registry, offline_registry, save_registry
    from .project import project_name
    from .provenance import GitProvenance, ProvenanceError, config_sha, git_provenance
    from .scaffold import LabExists, ScaffoldError, init_lab
    from .validation import Validation, validate_experiment

_LAZY = {
    "client_catalog": "catalog",
    "NewExperiment": "create",
    "create_experiment": "create",
    "default_method": "create",
    "HandshakeReport": "handshake",
    "check_handshake": "handshake",
    "BuiltSpec": "jobspec",
    "SubmitOptions": "jobspec",
    "build_jobspec": "jobspec",
    "experiment_path": "paths",
    "ExperimentRow": "listing",
    "list_experiments": "listing",
    "LOCK_FIELD": "lockgate",
    "exp_label": "lockgate",
    "lock_gate": "lockgate",
    "SPEC_ARCNAME": "package",
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
    "LabExists": "scaffold",
    "ScaffoldError": "scaffold",
    "init_lab": "scaffold",
    "Validation": "validation",
    "validate_experiment": "validation",
}

__all__ = [
    "LAB_FILE",
    "LOCK_FIELD",
    "SPEC_ARCNAME",
    "BuiltSpec",
    "ExperimentRow",
    "GitProvenance",
    "HandshakeReport",
    "LabExists",
    "LabNotFound",
    "NewExperiment",
    "Packed",
    "ProvenanceError",
    "ScaffoldError",
    "SubmitOptions",
    "Validation",
    "build_jobspec",
    "check_handshake",
    "client_catalog",
    "config_sha",
    "create_experiment",
    "default_method",
    "exp_label",
    "experiment_path",
    "find_root",
    "find_root_or_none",
    "git_provenance",
    "init_lab",
    "list_experiments",
    "load_registry",
    "lock_gate",
    "offline_registry",
    "pack_submission",
    "project_name",
    "read_plugins_lock",
    "save_registry",
    "select_plugins",
    "validate_experiment",
    "write_spec_file",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
