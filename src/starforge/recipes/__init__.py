"""Recipes: manifests, catalog loading and overlays, digests, hyperparameters, the handshake and recipe gates.

Lab concerns (`recipe.lock.json`, upgrades, experiment discovery, an experiment's `config.yaml`) live in
`starforge.lab`, which builds on this package; nothing here imports the lab.
"""

from ._cache import RecipeMemo
from ._catalog import BUILTIN_CORE_REQUIREMENT, Catalog, Shadowed, load_catalog, load_internal_recipes
from ._core import UPGRADE_CLIENT, satisfies, too_old
from ._digests import (
    SCHEMES,
    YAMLError,
    bundle_digest,
    canonical_json,
    catalog_digest,
    load_yaml,
    manifest_digest,
    manifest_digest_of_text,
)
from ._errors import CatalogError, ManifestProblem
from ._gates import check_gates
from ._gpu import gpu_problems, gpu_settings
from ._handshake import check_catalog, check_client_handshake, compare_server_entry
from ._hyperparams import format_override, param_overrides, parse_set, render_overrides, validate_hyperparams
from ._images import image_allowed, image_reference_error, image_registry_host
from ._model import DEFAULT_CORE_REQUIREMENT, Entrypoint, Param, Runtime, Variant
from ._payload import CATALOG_API_VERSION, catalog_payload, recipe_entry
from ._recipe import Recipe
from ._values import check_value
from .verdict import Verdict, check_document, open_catalog

__all__ = [
    "BUILTIN_CORE_REQUIREMENT",
    "CATALOG_API_VERSION",
    "DEFAULT_CORE_REQUIREMENT",
    "SCHEMES",
    "UPGRADE_CLIENT",
    "Catalog",
    "CatalogError",
    "Entrypoint",
    "ManifestProblem",
    "Param",
    "Recipe",
    "RecipeMemo",
    "Runtime",
    "Shadowed",
    "Variant",
    "Verdict",
    "YAMLError",
    "bundle_digest",
    "canonical_json",
    "catalog_digest",
    "catalog_payload",
    "check_catalog",
    "check_client_handshake",
    "check_document",
    "check_gates",
    "check_value",
    "compare_server_entry",
    "format_override",
    "gpu_problems",
    "gpu_settings",
    "image_allowed",
    "image_reference_error",
    "image_registry_host",
    "load_catalog",
    "load_internal_recipes",
    "load_yaml",
    "manifest_digest",
    "manifest_digest_of_text",
    "open_catalog",
    "param_overrides",
    "parse_set",
    "recipe_entry",
    "render_overrides",
    "satisfies",
    "too_old",
    "validate_hyperparams",
]
