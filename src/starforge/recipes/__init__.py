"""Recipes: manifests, catalog loading and overlays, digests, hyperparameters, the handshake and recipe gates."""

from ._catalog import BUILTIN_CORE_REQUIREMENT, Catalog, Shadowed, load_catalog
from ._config import config_lookup, read_config
from ._digests import (
    SCHEMES,
    bundle_digest,
    canonical_json,
    catalog_digest,
    manifest_digest,
    manifest_digest_of_text,
)
from ._errors import CatalogError, ManifestProblem
from ._experiments import current_experiment, locked_experiments, resolve_experiment
from ._gates import check_gates
from ._handshake import check_catalog, check_client_handshake, compare_server_entry
from ._hyperparams import format_override, param_overrides, parse_set, render_overrides, validate_hyperparams
from ._images import image_allowed, image_reference_error, image_registry_host
from ._locks import (
    LABELS,
    LOCK_FILE,
    LOCK_V4,
    LockInspection,
    expected_lock,
    inspect_lock,
    lock_diffs,
    normalise_lock,
    read_lock,
    write_lock,
)
from ._model import DEFAULT_CORE_REQUIREMENT, Entrypoint, Param, Runtime, Variant
from ._payload import CATALOG_API_VERSION, catalog_payload, recipe_entry
from ._recipe import Recipe
from ._upgrade import UpgradeError, UpgradePlan, apply_upgrade, plan_upgrade
from .verdict import Verdict, check_document, open_catalog

__all__ = [
    "BUILTIN_CORE_REQUIREMENT",
    "CATALOG_API_VERSION",
    "DEFAULT_CORE_REQUIREMENT",
    "LABELS",
    "LOCK_FILE",
    "LOCK_V4",
    "SCHEMES",
    "Catalog",
    "CatalogError",
    "Entrypoint",
    "LockInspection",
    "ManifestProblem",
    "Param",
    "Recipe",
    "Runtime",
    "Shadowed",
    "UpgradeError",
    "UpgradePlan",
    "Variant",
    "Verdict",
    "apply_upgrade",
    "bundle_digest",
    "canonical_json",
    "catalog_digest",
    "catalog_payload",
    "check_catalog",
    "check_client_handshake",
    "check_document",
    "check_gates",
    "compare_server_entry",
    "config_lookup",
    "current_experiment",
    "expected_lock",
    "format_override",
    "image_allowed",
    "image_reference_error",
    "image_registry_host",
    "inspect_lock",
    "load_catalog",
    "locked_experiments",
    "lock_diffs",
    "manifest_digest",
    "manifest_digest_of_text",
    "normalise_lock",
    "open_catalog",
    "param_overrides",
    "parse_set",
    "plan_upgrade",
    "read_config",
    "read_lock",
    "recipe_entry",
    "render_overrides",
    "resolve_experiment",
    "validate_hyperparams",
    "write_lock",
]
