"""The catalog handshake (recipes-and-locks §7): console-side H4-H8 at admission and client-side H1-H8."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starforge.contract import JobSpec, Problem

from ._core import UPGRADE_CLIENT, core_hint, parse_version, satisfies, too_old
from ._digests import catalog_digest
from ._values import as_object

if TYPE_CHECKING:
    from ._catalog import Catalog
    from ._recipe import Recipe

__all__ = ["check_catalog", "check_client_handshake", "check_core_version", "compare_server_entry"]

_UPGRADE = "upgrade the sf client, or have the console publish the recipe version this client ships"
_FIELDS = {"version": "spec.recipe.version", "digest": "spec.recipe.digest", "framework": "spec.framework.kind",
           "adapter": "spec.framework.kind"}
_CODES = {"version": "recipe_version_mismatch", "digest": "recipe_digest_mismatch",
          "framework": "framework_kind_mismatch", "adapter": "framework_kind_mismatch"}


def check_catalog(spec: JobSpec, catalog: Catalog) -> list[Problem]:
    """Return the first failing console-side check H4-H8 of `spec` against `catalog` (stage C), or []."""
    s = spec.spec
    recipe_id = s.recipe.name.strip()
    recipe, problems = catalog.lookup(recipe_id)
    if recipe is None:
        return problems
    if not catalog.is_enabled(recipe_id):
        return [Problem("spec.recipe.name", "recipe_unknown", f"recipe {recipe_id} is not enabled on this console",
                        "ask the console operator to enable it, or pick another recipe (`sf methods`)",
                        {"recipe": recipe_id})]
    who = f"{recipe.id}@{recipe.version}"
    if s.recipe.version != recipe.version:
        return [Problem("spec.recipe.version", "recipe_version_mismatch",
                        f"recipe {recipe.id} is version {recipe.version} on this console; the spec has "
                        f"{s.recipe.version}", _UPGRADE, _differs(recipe.id, recipe.version, s.recipe.version))]
    digest = recipe.digest(catalog.scheme)
    if s.recipe.digest != digest:
        return [Problem("spec.recipe.digest", "recipe_digest_mismatch",
                        f"recipe {who} has digest {digest} on this console; the spec has {s.recipe.digest}",
                        _UPGRADE + " (`sf recipe status --server` compares them)",
                        _differs(recipe.id, digest, s.recipe.digest))]
    if s.framework.kind != recipe.framework:
        return [Problem("spec.framework.kind", "framework_kind_mismatch",
                        f"recipe {recipe.id} runs on {recipe.framework}; the spec has framework.kind "
                        f"{s.framework.kind}", f"set framework.kind to {recipe.framework}",
                        _differs(recipe.id, recipe.framework, s.framework.kind))]
    versions = recipe.framework_versions
    if s.framework.version not in versions:
        return [Problem("spec.framework.version", "framework_version_unsupported",
                        f"recipe {who} supports framework version{'s' if len(versions) > 1 else ''} "
                        f"{', '.join(versions)}; the spec has {s.framework.version}",
                        f"use --framework-version {recipe.default_version}, or run `sf recipe upgrade <exp>`",
                        {**_differs(recipe.id, recipe.default_version, s.framework.version),
                         "allowed": list(versions)})]
    expected = recipe.runtime_id(s.framework.version).strip()
    if s.framework.runtime_id.strip() != expected:
        return [Problem("spec.framework.runtime_id", "runtime_id_mismatch",
                        f"recipe {who} at {s.framework.version} runs runtime {expected or '(none)'!s}; the spec has "
                        f"{s.framework.runtime_id.strip() or '(none)'}", _UPGRADE,
                        _differs(recipe.id, expected, s.framework.runtime_id.strip()))]
    return check_core_version(spec.provenance.core_version, recipe, catalog)


def check_core_version(core_version: str, recipe: Recipe, catalog: Catalog) -> list[Problem]:
    """Return the H2/H8 problem when `core_version` is invalid or outside the catalog's or recipe's range."""
    field = "provenance.core_version"
    who = f"recipe {recipe.id}@{recipe.version} on this console"
    if parse_version(core_version) is None:
        return [Problem(field, "invalid_version", f"{core_version!r} is not a valid version",
                        "core_version is the sf client's own version, e.g. 0.4.0")]
    for requirement in (catalog.core_requirement, recipe.requires_core):
        if satisfies(core_version, requirement) is False:
            built = f" (catalog built for {catalog.core_version})" if requirement == catalog.core_requirement else ""
            versions = _versions(requirement, core_version, catalog.core_version if built else "")
            action = UPGRADE_CLIENT if versions["too_old"] else "use an sf client within that range"
            return [Problem(field, "core_version_incompatible",
                            f"{who} needs core {requirement}{built}; this spec was built by core {core_version} — "
                            f"{action}", core_hint(core_version, requirement),
                            {"recipe": recipe.id, "versions": versions})]
    return []


def _differs(recipe: str, expected: Any, got: Any) -> dict[str, Any]:
    return {"recipe": recipe, "expected": expected, "got": got}


def _versions(needed: str, have: str, catalog: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"needed": needed, "have": have, "too_old": too_old(have, needed)}
    if catalog:
        out["catalog"] = catalog
    return out


def _catalog_problem(code: str, message: str, hint: str = _UPGRADE,
                     data: Mapping[str, Any] | None = None) -> list[Problem]:
    return [Problem("catalog", code, message, hint, data or {})]


def _envelope(payload: Any, client_version: str) -> list[Problem]:
    if not isinstance(payload, Mapping):
        return _catalog_problem("catalog_unsupported", "the console's recipe catalog is not a JSON object",
                                "check the console URL")
    api = payload.get("apiVersion")
    contract = payload.get("contract")
    versions = contract.get("versions") if isinstance(contract, Mapping) else None
    if api not in ("forge/recipe-catalog/v1", "forge/recipe-catalog/v2") or versions != ["forge/v2"]:
        return _catalog_problem("catalog_unsupported",
                                f"the console publishes catalog {api!r} for contracts {versions!r}; this client reads "
                                "forge/recipe-catalog/v1 or v2 for [\"forge/v2\"]")
    core = as_object(payload.get("core"))
    server = str(core.get("version") or "").strip()
    requirement = str(core.get("requirement") or "").strip()
    if api == "forge/recipe-catalog/v1":
        if server != client_version or requirement != f"=={client_version}":
            return _catalog_problem("core_version_incompatible",
                                    f"the console's catalog is for core {server or '(unset)'} ({requirement or 'no range'}); "
                                    f"this client is {client_version}", core_hint(client_version, requirement or "==0"),
                                    {"versions": _versions(requirement or f"=={server}", client_version, server)})
    elif not server or not requirement:
        return _catalog_problem("core_version_incompatible", "the console's catalog does not name its core version "
                                "and requirement", "ask the console operator to publish core.version and requirement")
    else:
        for version, who in ((client_version, "this client"), (server, "the catalog itself")):
            if satisfies(version, requirement) is not True:
                return _catalog_problem("core_version_incompatible",
                                        f"the console's catalog (built for core {server}) needs core {requirement}; "
                                        f"{who} is {version}", core_hint(client_version, requirement),
                                        {"versions": _versions(requirement, version, server)})
    recipes = payload.get("recipes")
    if not isinstance(recipes, list) or not all(isinstance(r, Mapping) for r in recipes):
        return _catalog_problem("catalog_unsupported", "the console's catalog has no recipes list")
    if payload.get("catalog_digest") != catalog_digest(recipes):
        return _catalog_problem("catalog_digest_mismatch",
                                f"catalog_digest {payload.get('catalog_digest')!r} does not match its recipes "
                                f"({catalog_digest(recipes)})", "retry; if it persists, report it to the console operator")
    return []


def check_client_handshake(payload: Any, spec: JobSpec, client_version: str) -> list[Problem]:
    """Return the first failing client-side check H1-H8 of the console's catalog `payload` against `spec`, or [].

    H1-H3 are reported at `catalog`; H5 lists every differing key with the server and client values side by side.
    """
    problems = _envelope(payload, client_version)
    if problems:
        return problems
    s = spec.spec
    entry = next((r for r in payload["recipes"] if r.get("name") == s.recipe.name), None)
    if entry is None:
        return [Problem("spec.recipe.name", "recipe_unknown",
                        f"the console does not publish recipe {s.recipe.name}",
                        "have the console enable it, or pick a recipe from its catalog", {"recipe": s.recipe.name})]
    ours = {"version": s.recipe.version, "digest": s.recipe.digest, "framework": s.framework.kind,
            "adapter": s.framework.kind}
    differing = {k: {"server": entry.get(k), "cli": v} for k, v in ours.items() if entry.get(k) != v}
    if differing:
        first = next(iter(differing))
        detail = "; ".join(f"{k}: server {d['server']}, cli {d['cli']}" for k, d in differing.items())
        return [Problem(_FIELDS[first], _CODES[first],
                        f"recipe {s.recipe.name} differs from the console's catalog — {detail}", _UPGRADE,
                        _differs(s.recipe.name, differing[first]["server"], differing[first]["cli"]))]
    versions = entry.get("supported_framework_versions")
    variants = as_object(as_object(entry.get("runtime")).get("versions"))
    fv = s.framework.version
    if not isinstance(versions, list) or fv not in versions or not isinstance(variants.get(fv), dict):
        listed = ", ".join(map(str, versions)) if isinstance(versions, list) else "none"
        return [Problem("spec.framework.version", "framework_version_unsupported",
                        f"the console's {s.recipe.name} supports framework versions {listed}; the spec has {fv}",
                        _UPGRADE, {"recipe": s.recipe.name, "got": fv,
                                   "allowed": [str(v) for v in versions] if isinstance(versions, list) else []})]
    server_id = str(as_object(variants.get(fv)).get("runtime_id") or "").strip()
    if server_id != s.framework.runtime_id.strip():
        return [Problem("spec.framework.runtime_id", "runtime_id_mismatch",
                        f"runtime_id: server {server_id or '(none)'}, cli {s.framework.runtime_id or '(none)'}",
                        _UPGRADE, _differs(s.recipe.name, server_id, s.framework.runtime_id.strip()))]
    requires = str(entry.get("core_requires") or "").strip()
    if requires and satisfies(client_version, requires) is not True:
        return [Problem("provenance.core_version", "core_version_incompatible",
                        f"the console's {s.recipe.name}@{entry.get('version')} needs core {requires}; "
                        f"this client is {client_version}", core_hint(client_version, requires),
                        {"recipe": s.recipe.name, "versions": _versions(requires, client_version)})]
    return []


def compare_server_entry(payload: Any, recipe_id: str, version: str, digest: str) -> tuple[str, str]:
    """Compare the console's entry for `recipe_id` with the local `version` and `digest` (`sf recipe status --server`).

    Returns `(status, message)`: `current`, `differs` (naming the differing values) or `not_enabled`.
    """
    recipes = payload.get("recipes") if isinstance(payload, dict) else None
    entry = next((r for r in recipes or [] if isinstance(r, dict) and r.get("name") == recipe_id), None)
    if entry is None:
        return "not_enabled", f"the console has not enabled {recipe_id}"
    differing = [f"{key}: server {entry.get(key)}, local {ours}"
                 for key, ours in (("version", version), ("digest", digest)) if entry.get(key) != ours]
    if differing:
        return "differs", "; ".join(differing)
    return "current", "current"
