"""Recipe operations: the console's published catalog, and one recipe's declarations (parameters and runtime)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._backend import Backend
from ._errors import ToolRefusal
from ._results import Outcome
from ._truncate import clip_items

if TYPE_CHECKING:
    from starforge.recipes import Catalog, Param, Recipe

__all__ = ["MAX_RECIPES", "list_recipes", "param_dict", "published_entry", "recipe_detail", "show_recipe"]

MAX_RECIPES = 200


def published_entry(payload: Mapping[str, Any], recipe: str) -> Mapping[str, Any] | None:
    """Return the console's published entry of `recipe`, or None."""
    rows = payload.get("recipes")
    return next((r for r in rows if isinstance(r, Mapping) and r.get("name") == recipe), None) if isinstance(
        rows, list) else None


def _local(backend: Backend) -> Catalog | None:
    try:
        return backend.catalog()
    except (ValueError, OSError):  # a broken local tree must not hide the console's own catalog
        return None


def param_dict(param: Param, framework_version: str) -> dict[str, Any]:
    """Return a parameter declaration as data: type, bounds, choices, default, config path, doc."""
    return {
        "name": param.name,
        "type": param.type,
        "required": param.required,
        "default": param.default,
        "min": param.min,
        "max": param.max,
        "exclusive_min": param.exclusive_min,
        "choices": list(param.choices) if param.choices is not None else None,
        "path": param.path_for(framework_version),
        "path_overrides": dict(param.path_overrides),
        "group": param.group,
        "doc": " ".join(param.doc.split()),
    }


def recipe_detail(recipe: Recipe) -> dict[str, Any]:
    """Return what a person or agent needs to write a spec for `recipe`: runtime variants, roles, params."""
    default = recipe.default_version
    return {
        "title": recipe.title,
        "summary": " ".join(recipe.summary.split()),
        "category": recipe.category,
        "framework": recipe.framework,
        "runtime": {
            "default_version": default,
            "versions": [{"version": v, "runtime_id": var.runtime_id, "status": var.status, "sunset": var.sunset}
                         for v, var in recipe.runtime.versions.items()],
        },
        "entrypoint": recipe.entrypoint.to_dict(),
        "roles": list(recipe.roles),
        "lifecycle": [{"action": a, "gpus": recipe.lifecycle_resources.get(a, 0)} for a in recipe.lifecycle],
        "observability": recipe.observability,
        "requires_core": recipe.requires_core,
        "hyperparam_keys": recipe.hyperparam_keys,
        "params": [param_dict(p, default) for p in recipe.params.values()],
    }


def list_recipes(backend: Backend, *, limit: int) -> Outcome:
    """Return the recipes this console publishes, in product order, with titles from the declarations."""
    payload = backend.recipes()
    catalog = _local(backend)
    rows = []
    for entry in payload.get("recipes") or []:
        if not isinstance(entry, Mapping):
            continue
        local = catalog.get(str(entry.get("name"))) if catalog is not None else None
        runtime: Mapping[str, Any] = entry["runtime"] if isinstance(entry.get("runtime"), Mapping) else {}
        rows.append({
            "name": entry.get("name"),
            "version": entry.get("version"),
            "digest": entry.get("digest"),
            "framework": entry.get("framework"),
            "default_version": runtime.get("default_version"),
            "framework_versions": list(entry.get("supported_framework_versions") or []),
            "core_requires": entry.get("core_requires"),
            "title": local.title if local is not None else "",
            "category": local.category if local is not None else "",
        })
    kept, note = clip_items(rows, limit, what="recipes", more="ask with a larger limit")
    lines = [f"- {r['name']} {r['version']}" + (f" — {r['title']}" if r["title"] else "") for r in kept]
    summary = f"{len(rows)} recipe(s) published by the console" + ("\n" + "\n".join(lines) if lines else "")
    core: Mapping[str, Any] = payload["core"] if isinstance(payload.get("core"), Mapping) else {}
    return Outcome(summary + (f"\n{note}" if note else ""),
                   {"recipes": kept, "count": len(rows), "core": dict(core), "note": note})


def show_recipe(backend: Backend, *, recipe: str) -> Outcome:
    """Return one recipe: the console's published identity and the declarations (params, runtime, roles)."""
    name = recipe.strip()
    entry = published_entry(backend.recipes(), name)
    catalog = _local(backend)
    local, problems = catalog.lookup(name, field="recipe") if catalog is not None else (None, [])
    if local is None and entry is None:
        raise ToolRefusal("Unknown recipe", problems, hint="list_recipes shows what this console publishes",
                          status=404)
    notes = []
    if entry is None:
        notes.append(f"{name} is not published by this console: a spec for it is refused here")
    elif local is not None and (entry.get("version") != local.version
                                or entry.get("manifest_digest") not in (None, local.manifest_digest)):
        notes.append(f"the console publishes {name} {entry.get('version')}; the declarations below are from "
                     f"{local.version} — `sf recipe upgrade` aligns a lab with the console")
    if local is None:
        notes.append("no local declarations for this recipe: parameters are unknown here")
    data: dict[str, Any] = {"name": local.id if local is not None else name, "published": entry is not None}
    if entry is not None:
        data.update(version=entry.get("version"), digest=entry.get("digest"), framework=entry.get("framework"))
    elif local is not None:
        data.update(version=local.version, digest=None, framework=local.framework)
    if local is not None:
        data.update(recipe_detail(local))
    data["notes"] = notes
    params = data.get("params") or []
    lines = [f"{data['name']} {data.get('version')}" + (f" — {data.get('title')}" if data.get("title") else "")]
    lines += [f"- {p['name']}{' (required)' if p['required'] else ''}: {p['type']}"
              + (f", default {p['default']}" if p["default"] is not None else "")
              + (f", min {p['min']}" if p["min"] is not None else "") + (f", max {p['max']}" if p["max"] is not None else "")
              + (f", one of {p['choices']}" if p["choices"] else "") for p in params]
    return Outcome("\n".join(lines + notes), data)

