"""Hyperparameters: strict validation and rebuild (gate R1, §4.2), `--set` typing (§4.3), overrides (§4.4)."""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from starforge.contract import Problem

from ._values import check_value, describe

if TYPE_CHECKING:
    from ._recipe import Recipe

__all__ = ["format_override", "param_overrides", "parse_set", "render_overrides", "validate_hyperparams"]

_INT = re.compile(r"[+-]?[0-9](?:_?[0-9])*", re.ASCII)
_DIGITS = r"[0-9](?:_?[0-9])*"
_FLOAT = re.compile(rf"[+-]?(?:{_DIGITS}\.(?:{_DIGITS})?|\.{_DIGITS}|{_DIGITS})(?:[eE][+-]?{_DIGITS})?", re.ASCII)
_NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.ASCII | re.IGNORECASE)
_MAX_TEMPLATE_CONFIG = 1024 * 1024
_TRUE = frozenset({"true", "yes", "on"})
_FALSE = frozenset({"false", "no", "off"})


def _rename_paths(values: Mapping[str, Any], recipe: Recipe, framework_version: str,
                  problems: list[Problem]) -> dict[str, Any]:
    """Step 0 (`hyperparam_keys: names_or_paths`): rename config-path keys to parameter names."""
    by_path = {p.path_for(framework_version): p.name for p in recipe.params.values() if p.path_for(framework_version)}
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = by_path.get(key) if key not in recipe.params else None
        if name is None:
            out[key] = value
        elif name in values:
            problems.append(Problem("spec.hyperparams", "duplicate_hyperparameter",
                                    f"{name} is given both by name and by its config path {key}",
                                    f"keep only {name}", {"name": name, "got": key}))
        else:
            out[name] = value
    return out


def _yaml_scalar(value: Any) -> str:
    """Return `value` as YAML 1.1 reads it back (a float keeps its dot: PyYAML reads `1e-06` as text)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    text = describe(value)
    if isinstance(value, float) and "e" in text and "." not in text:
        mantissa, exponent = text.split("e", 1)
        text = f"{mantissa}.0e{exponent}"
    return text


def _template_config(recipe: Recipe) -> Any:
    """Return the recipe's template config.yaml as loaded (None when it is missing or refused)."""
    from starforge.safeyaml import YamlRefused, load_yaml_bounded

    try:
        return load_yaml_bounded((recipe.template_dir / "config.yaml").read_text(encoding="utf-8"),
                                 max_bytes=_MAX_TEMPLATE_CONFIG, what="config.yaml")
    except (OSError, UnicodeDecodeError, YamlRefused):
        return None


def _sets(config: Any, key: str) -> bool:
    """Return True when `config` sets `key` (a flat key, else a dotted path)."""
    if isinstance(config, dict) and key in config:
        return True
    for part in key.split("."):
        if not isinstance(config, dict) or part not in config:
            return False
        config = config[part]
    return True


def _unknown_problem(unknown: list[str], values: Mapping[str, Any], recipe: Recipe,
                     framework_version: str) -> Problem:
    declared = list(recipe.params)
    by_path = {p.path_for(framework_version): p.name for p in recipe.params.values() if p.path_for(framework_version)}
    described = []
    suggestions: dict[str, str] = {}
    template = _template_config(recipe)  # a key it sets is a framework setting, not a typo of a parameter name
    for key in unknown:
        if key in by_path:
            described.append(f"{key} (the config path of {by_path[key]}: use the name)")
            suggestions[key] = by_path[key]
            continue
        if _sets(template, key):
            described.append(f"{key} (a setting of the config file, not a parameter)")
            continue
        close = difflib.get_close_matches(key, declared, n=1)
        described.append(f"{key} (did you mean {close[0]}?)" if close else key)
        if close:
            suggestions[key] = close[0]
    listed = ", ".join(declared) if declared else "none"
    message = f"unknown hyperparameter{'s' if len(unknown) > 1 else ''} {', '.join(described)}; declared: {listed}"
    hint = f"did you mean {', '.join(suggestions.values())}? " if suggestions else ""
    hint += f"keys are parameter names; `sf methods {recipe.id}` lists them with their config paths"
    settings = [key for key in unknown if key not in suggestions]
    if settings:
        key = settings[0]
        example = f"{key}: {_yaml_scalar(values[key])}" if "." not in key else f"{key} at its path"
        hint += (f"; any other setting of {recipe.framework}'s own config goes in the experiment's config.yaml "
                 f"(`{example}`)")
    data = {"recipe": recipe.id, "unknown": unknown, "allowed": declared}
    return Problem("spec.hyperparams", "unknown_hyperparameter", message, hint,
                   {**data, "suggestion": suggestions} if suggestions else data)


def validate_hyperparams(values: Mapping[str, Any], recipe: Recipe, framework_version: str, *,
                         validate: bool = True) -> tuple[dict[str, Any], list[Problem]]:
    """Return the hyperparameters rebuilt in declaration order with defaults filled in, and every R1 problem.

    With `validate=False` (the CLI's --no-validate) nothing is checked: declared keys come first in declaration
    order with defaults filled in, then the undeclared keys in their given order.
    """
    problems: list[Problem] = []
    given: dict[str, Any] = dict(values)
    if recipe.hyperparam_keys == "names_or_paths":
        given = _rename_paths(given, recipe, framework_version, problems if validate else [])
    params = recipe.params
    unknown = [k for k in given if k not in params]
    if unknown and validate:
        problems.append(_unknown_problem(unknown, given, recipe, framework_version))
    out: dict[str, Any] = {}
    for name, param in params.items():
        field = f"spec.hyperparams.{name}"
        if name in given:
            if validate:
                problems.extend(check_value(param, given[name], field))
            out[name] = given[name]
        elif param.required and validate:
            problems.append(Problem("spec.hyperparams", "missing_hyperparameter",
                                    f"{name} is required by {recipe.id}",
                                    f"set it, e.g. `sf submit --set {name}=...`" + (f" ({param.doc})" if param.doc else ""),
                                    {"recipe": recipe.id, "name": name}))
        elif param.default is not None:
            out[name] = param.default
    if not validate:
        out.update((k, given[k]) for k in unknown)
    return out, problems


def _type_literal(text: str) -> tuple[Any, str]:
    lowered = text.lower()
    if lowered in _TRUE:
        return True, ""
    if lowered in _FALSE:
        return False, ""
    if _INT.fullmatch(text):
        return int(text.replace("_", "")), ""
    if _FLOAT.fullmatch(text):
        return float(text.replace("_", "")), ""
    if _NON_FINITE.fullmatch(text):
        return None, f"{text!r} is not a finite number"
    return text, ""


def parse_set(items: Iterable[str]) -> tuple[dict[str, Any], list[Problem]]:
    """Return `--set key=value` items as typed values (§4.3; the last repeat wins) and a problem per bad item."""
    values: dict[str, Any] = {}
    problems: list[Problem] = []
    for item in items:
        key, eq, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if not eq or not key:
            problems.append(Problem("--set", "invalid_set", f"{item!r} must be key=value",
                                    "write --set learning_rate=1e-6"))
            continue
        value, error = _type_literal(raw)
        if error:
            problems.append(Problem("--set", "not_finite", f"{key}: {error}", "NaN and infinities are refused"))
            continue
        values.pop(key, None)
        values[key] = value
    return values, problems


def format_override(value: Any) -> str:
    """Return the text form of an override value: `true`/`false` for booleans, `null`, else `str(value)`."""
    if isinstance(value, bool) or value is None:
        return describe(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("non-finite override values are refused")
    return str(value)


def param_overrides(values: Mapping[str, Any], recipe: Recipe, framework_version: str) -> list[tuple[str, Any]]:
    """Return `(config path, value)` for each given parameter that has a path (its `path_overrides` entry wins)."""
    out: list[tuple[str, Any]] = []
    for name, value in values.items():
        param = recipe.params.get(name)
        path = param.path_for(framework_version) if param else ""
        if path:
            out.append((path, value))
    return out


def render_overrides(values: Mapping[str, Any], recipe: Recipe, framework_version: str) -> list[tuple[str, str]]:
    """Return `(path, text)` framework overrides (§4.4), rendered as `<path>=<text>` by the launcher."""
    return [(path, format_override(value)) for path, value in param_overrides(values, recipe, framework_version)]
