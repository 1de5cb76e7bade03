"""The published catalog (`GET /api/recipes`, wire §6.2): envelope, one entry per enabled recipe, catalog digest."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ._digests import catalog_digest
from ._recipe import Recipe

__all__ = ["CATALOG_API_VERSION", "CONTRACT_VERSIONS", "catalog_payload", "recipe_entry"]

CATALOG_API_VERSION = "forge/recipe-catalog/v2"
CONTRACT_VERSIONS = ["forge/v2"]


class Published(Protocol):
    """What the payload is made of: a catalog's enabled recipes, its digest scheme and its core handshake values
    (`Catalog` is one; typed here so that the catalog can import its payload without a circle)."""

    @property
    def enabled_recipes(self) -> Sequence[Recipe]: ...

    @property
    def scheme(self) -> str: ...

    @property
    def core_version(self) -> str: ...

    @property
    def core_requirement(self) -> str: ...


def recipe_entry(recipe: Recipe, scheme: str) -> dict[str, Any]:
    """Return one published entry: identity, bundle digest under `scheme`, runtime ids, core range, sub-digests."""
    runtime = recipe.runtime
    return {
        "name": recipe.id,
        "version": recipe.version,
        "digest": recipe.digest(scheme),
        "framework": recipe.framework,
        "adapter": recipe.framework,
        "supported_framework_versions": list(runtime.versions),
        "runtime": {
            "default_version": runtime.default_version,
            "versions": {v: {"runtime_id": variant.runtime_id} for v, variant in runtime.versions.items()},
        },
        "core_requires": recipe.requires_core,
        "manifest_digest": recipe.manifest_digest,
        "template_digest": recipe.template_digest,
    }


def catalog_payload(catalog: Published) -> dict[str, Any]:
    """Return the whole payload of `catalog`, enabled recipes in product order, with its `catalog_digest`."""
    enabled = catalog.enabled_recipes
    for recipe in enabled:
        recipe.compute_template_digest(flush=False)  # one cache write per tree below, not one per recipe
    for recipe in enabled:
        recipe.flush_cache()  # writes each tree's cache once: later calls find nothing new to write
    recipes = [recipe_entry(r, catalog.scheme) for r in enabled]
    return {
        "apiVersion": CATALOG_API_VERSION,
        "contract": {"versions": list(CONTRACT_VERSIONS)},
        "core": {"version": catalog.core_version, "requirement": catalog.core_requirement},
        "recipes": recipes,
        "catalog_digest": catalog_digest(recipes),
    }
