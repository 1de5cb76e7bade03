"""Manifest rules for parameter declarations (§4.1, plus our stricter rules) and display translations (`i18n`)."""

from __future__ import annotations

import math
from typing import Any

from ._checker import SAFE_SEGMENT, Checker, join
from ._model import Param
from ._values import TYPES, check_value, type_name

__all__ = ["check_i18n", "check_params"]

_PARAM_KEYS = frozenset(
    {"type", "path", "path_overrides", "required", "default", "min", "max", "exclusive_min", "choices", "doc", "group",
     "needs_gpu"}
)
_I18N_KEYS = frozenset({"title", "summary", "params"})
_I18N_PARAM_KEYS = frozenset({"doc", "group"})


def check_params(c: Checker, value: Any) -> list[str]:
    """Check `params` (every declaration); return the declared names."""
    obj = c.mapping(value if value is not None else {}, "params")
    if obj is None:
        return []
    names: list[str] = []
    for name, decl in obj.items():
        if not isinstance(name, str):
            continue  # reported by the string-key rule
        field = f"params.{name}"
        names.append(name)
        if not SAFE_SEGMENT.fullmatch(name):
            c.bad(field, f"parameter name {name!r} is not a safe segment")
        _check_declaration(c, name, decl, field)
    return names


def _number(c: Checker, obj: dict[str, Any], key: str, field: str) -> bool:
    value = obj.get(key)
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        c.bad(join(field, key), f"must be a number, got {type_name(value)}")
        return False
    if not math.isfinite(value):
        c.bad(join(field, key), f"must be a finite number, got {value}")
        return False
    return True


def _check_declaration(c: Checker, name: str, decl: Any, field: str) -> None:
    obj = c.mapping(decl if decl is not None else {}, field)
    if obj is None:
        return
    before = len(c.problems)
    for key in obj:
        if isinstance(key, str) and key not in _PARAM_KEYS:
            c.bad(join(field, key), f"unknown parameter key (one of {', '.join(sorted(_PARAM_KEYS))})")
    kind = obj.get("type")
    if kind is not None and kind not in TYPES:
        c.bad(join(field, "type"), f"{kind!r} is not one of {', '.join(TYPES)}")
    kind = kind if kind in TYPES else "str"
    c.string(obj, "path", field)
    overrides = c.mapping(obj.get("path_overrides"), join(field, "path_overrides"), required=False)
    for version, path in (overrides or {}).items():
        if not isinstance(version, str) or not version.strip() or not isinstance(path, str) or not path.strip():
            c.bad(join(field, "path_overrides"), "framework versions and paths must be non-empty strings")
            break
    c.boolean(obj, "required", field)
    c.boolean(obj, "exclusive_min", field)
    bounds_ok = _number(c, obj, "min", field) and _number(c, obj, "max", field)
    for key in ("min", "max"):
        if obj.get(key) is not None and kind not in ("int", "float"):
            c.bad(join(field, key), f"bounds apply to int and float parameters only, not {kind}")
    if bounds_ok and obj.get("min") is not None and obj.get("max") is not None and obj["min"] > obj["max"]:
        c.bad(join(field, "max"), f"max {obj['max']} is below min {obj['min']}")
    choices = obj.get("choices")
    if choices is not None and not isinstance(choices, list):
        c.bad(join(field, "choices"), f"must be a list, got {type_name(choices)}")
    elif kind == "enum" and not choices:
        c.bad(join(field, "choices"), "an enum parameter needs a non-empty choices list")
    elif isinstance(choices, list):
        for i, choice in enumerate(choices):
            if isinstance(choice, (list, dict)):
                c.bad(join(join(field, "choices"), i), "a choice must be a scalar")
    c.string(obj, "doc", field)
    c.string(obj, "group", field)
    c.boolean(obj, "needs_gpu", field)
    if obj.get("needs_gpu") is True and kind != "bool":
        c.bad(join(field, "needs_gpu"), f"needs_gpu applies to bool parameters only, not {kind}")
    if len(c.problems) == before and obj.get("default") is not None:
        param = Param.from_dict(name, obj)
        for problem in check_value(param, obj["default"], join(field, "default")):
            c.bad(join(field, "default"), f"the default fails its own check: {problem.message}")


def check_i18n(c: Checker, value: Any, declared: list[str]) -> None:
    """Check `i18n`: `{locale: {title, summary, params: {name: {doc, group}}}}` for declared parameters only."""
    obj = c.mapping(value, "i18n", required=False)
    for locale, body in (obj or {}).items():
        if not isinstance(locale, str):
            continue
        field = f"i18n.{locale}"
        entry = c.mapping(body if body is not None else {}, field)
        if entry is None:
            continue
        for key in entry:
            if isinstance(key, str) and key not in _I18N_KEYS:
                c.bad(join(field, key), "unknown translation key (title, summary, params)")
        c.string(entry, "title", field)
        c.string(entry, "summary", field)
        params = c.mapping(entry.get("params"), join(field, "params"), required=False)
        for name, text in (params or {}).items():
            if not isinstance(name, str):
                continue
            pfield = join(join(field, "params"), name)
            if name not in declared:
                c.bad(pfield, f"translates {name!r}, which is not a declared parameter")
                continue
            tr = c.mapping(text if text is not None else {}, pfield)
            for key in tr or {}:
                if isinstance(key, str) and key not in _I18N_PARAM_KEYS:
                    c.bad(join(pfield, key), "unknown parameter translation key (doc, group)")
            if tr:
                c.string(tr, "doc", pfield)
                c.string(tr, "group", pfield)
