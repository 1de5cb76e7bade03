"""Readers for the identity parts of `spec` (plugins, recipe, source, framework, model), in reference order."""

from __future__ import annotations

from typing import Any

from ._build import (
    new_framework,
    new_model,
    new_peft,
    new_plugin,
    new_recipe_ref,
    new_source,
)
from ._grammar import (
    ArtifactRef,
    check_digest,
    check_exp_path,
    check_plugin_id,
    check_recipe_id,
    check_safe_segment,
    is_model_ref,
    match_digest,
    match_exp_path,
    match_segment,
    match_two_part,
    parse_init_from,
    parse_versioned_ref,
)
from ._model import (
    Framework,
    Model,
    Peft,
    Plugin,
    RecipeRef,
    Source,
)
from ._walk import Walk, type_name

__all__ = ["read_framework", "read_model", "read_plugins", "read_recipe", "read_source"]

_PLUGIN_KEYS = frozenset({"id", "version", "digest"})
_RECIPE_KEYS = frozenset({"name", "version", "digest", "plugins"})
_SOURCE_KEYS = frozenset({"exp", "entrypoint"})
_FRAMEWORK_KEYS = frozenset({"kind", "version", "runtime_id", "image", "observability_url"})
_MODEL_KEYS = frozenset({"base", "peft", "init_from"})
_PEFT_KEYS = frozenset({"kind", "dim", "alpha"})


def read_plugins(w: Walk, value: Any) -> tuple[Plugin, ...] | None:
    """Read `spec.plugins`: type, each element, duplicate ids, then case-insensitive leaf collisions."""
    items = w.list_of(value, "spec.plugins")
    if items is None:
        return None
    plugins: list[Plugin] = []
    ok = True
    for i, item in enumerate(items):
        field = f"spec.plugins[{i}]"
        obj = w.obj(item, field, _PLUGIN_KEYS)
        if obj is None:
            ok = False
            continue
        if not obj:
            w.bad(field, "missing_field", "a plugin needs id, version and digest")
            ok = False
            continue
        plugin = _read_plugin(w, obj, field)
        if plugin is None:
            ok = False
        else:
            plugins.append(plugin)
    if not ok:
        return None
    seen: set[str] = set()
    leaves: dict[str, str] = {}
    for plugin in plugins:
        if plugin.id in seen:
            w.bad(
                "spec.plugins",
                "duplicate_plugin",
                f"plugin {plugin.id} is listed twice",
                "keep one entry per plugin in plugins.lock.json",
            )
            return None
        seen.add(plugin.id)
    for plugin in plugins:
        leaf = plugin.leaf.lower()
        other = leaves.get(leaf)
        if other is not None:
            w.bad(
                "spec.plugins",
                "plugin_leaf_collision",
                f"plugins {other} and {plugin.id} would both unpack into forge_plugins/{plugin.leaf}/",
                "use only one of them in this experiment (`sf plugin remove`)",
            )
            return None
        leaves[leaf] = plugin.id
    return tuple(plugins)


def _read_plugin(w: Walk, obj: dict[str, Any], field: str) -> Plugin | None:
    before = len(w.problems)
    pid = w.required(obj, field, "id")
    if pid is not None and match_two_part(pid) is None:
        w.problems.extend(check_plugin_id(pid, f"{field}.id"))
    version = w.required(obj, field, "version")
    if version is not None and match_segment(version) is None:
        w.bad(
            f"{field}.version",
            "invalid_plugin_version",
            f"plugin version {version!r} is not valid",
            "use the version published by `sf plugin install`, e.g. 1.2.0",
        )
    digest = w.required(obj, field, "digest")
    if digest is not None and match_digest(digest) is None:
        w.problems.extend(check_digest(digest, f"{field}.digest"))
    if len(w.problems) != before:
        return None
    return new_plugin(pid or "", version or "", digest or "")


def read_recipe(w: Walk, value: Any) -> RecipeRef | None:
    """Read `spec.recipe`: name, built-in patch names, version, digest."""
    obj = w.obj(value, "spec.recipe", _RECIPE_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    name = w.required(obj, "spec.recipe", "name")
    if name is not None and match_two_part(name) is None:
        w.problems.extend(check_recipe_id(name, "spec.recipe.name"))
    patches: list[str] = []
    items = w.list_of(obj.get("plugins"), "spec.recipe.plugins")
    for item in items or ():
        if not isinstance(item, str):
            w.bad("spec.recipe.plugins[]", "not_a_string", f"must be a string, got {type_name(item)}")
            continue
        item = item.strip()
        if match_segment(item) is None:
            w.problems.extend(check_safe_segment(item, "spec.recipe.plugins[]", "patch name"))
        patches.append(item)
    version = w.required(obj, "spec.recipe", "version")
    digest = w.required(obj, "spec.recipe", "digest")
    if digest is not None and match_digest(digest) is None:
        w.problems.extend(check_digest(digest, "spec.recipe.digest"))
    if len(w.problems) != before:
        return None
    return new_recipe_ref(name or "", version or "", digest or "", tuple(patches))


def read_source(w: Walk, value: Any) -> Source | None:
    """Read `spec.source`: the entrypoint must be empty (checked first), then the experiment path."""
    obj = w.obj(value, "spec.source", _SOURCE_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    entrypoint = obj.get("entrypoint")
    if entrypoint is not None and not (isinstance(entrypoint, str) and not entrypoint.strip()):
        w.bad(
            "spec.source.entrypoint",
            "entrypoint_forbidden",
            "must be empty: the entrypoint belongs to the recipe",
            "to run your own command, use the custom/custom recipe",
        )
    exp = w.required(obj, "spec.source", "exp")
    if exp is not None and match_exp_path(exp) is None:
        w.problems.extend(check_exp_path(exp, "spec.source.exp"))
    if len(w.problems) != before:
        return None
    return new_source((exp or "").rstrip("/"))


def read_framework(w: Walk, value: Any) -> Framework | None:
    """Read `spec.framework`: kind, version, runtime_id; image and observability_url by type only."""
    obj = w.obj(value, "spec.framework", _FRAMEWORK_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    kind = w.required(obj, "spec.framework", "kind")
    if kind is not None and match_segment(kind) is None:
        w.problems.extend(check_safe_segment(kind, "spec.framework.kind", "framework"))
    version = w.required(obj, "spec.framework", "version")
    runtime_id = w.string(obj, "spec.framework", "runtime_id")
    if runtime_id and match_segment(runtime_id) is None:
        w.problems.extend(check_safe_segment(runtime_id, "spec.framework.runtime_id", "runtime id"))
    image = w.string(obj, "spec.framework", "image")
    url = w.string(obj, "spec.framework", "observability_url")
    if len(w.problems) != before:
        return None
    return new_framework(kind or "", version or "", runtime_id or "", image or "", url or "")


def read_model(w: Walk, value: Any) -> Model | None:
    """Read `spec.model`: init_from type, base, peft, then the init_from grammar."""
    obj = w.obj(value, "spec.model", _MODEL_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    init_from_text = w.string(obj, "spec.model", "init_from")
    base = w.string(obj, "spec.model", "base")
    if base and is_model_ref(base):  # a registered model: a strict reference with its version
        w.problems.extend(parse_versioned_ref(base, "spec.model.base", version_required=True)[1])
    peft = _read_peft(w, obj.get("peft"))
    init_from: ArtifactRef | None = None
    if init_from_text:
        init_from, problems = parse_init_from(init_from_text, "spec.model.init_from")
        w.problems.extend(problems)
    if len(w.problems) != before:
        return None
    return new_model(base or "", peft, init_from)


def _read_peft(w: Walk, value: Any) -> Peft | None:
    obj = w.obj(value, "spec.model.peft", _PEFT_KEYS)
    if not obj:
        return None
    kind = w.string(obj, "spec.model.peft", "kind")
    raw = obj.get("dim")
    dim = None if raw is None else w.positive_int(raw, "spec.model.peft", "dim")
    raw = obj.get("alpha")
    alpha = None if raw is None else w.positive_int(raw, "spec.model.peft", "alpha")
    if not kind and dim is None and alpha is None:
        return None
    return new_peft(kind or "", dim, alpha)
