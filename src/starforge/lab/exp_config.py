"""An experiment's `config.yaml`, read best-effort: its `defaults:` chain resolved when possible, dotted lookups.

It also holds the hyperparameter precedence rule, lowest first: the recipe's default < the value the experiment's
config sets at the parameter's path < `--set`. `config_hyperparams` gives the middle layer, which the lab sends as
explicit hyperparameters so that the console's default filling (gate R1) never replaces what the config says.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starforge.recipes import Recipe

__all__ = ["CONFIG_FILE", "config_hyperparams", "config_lookup", "read_config", "submitted_hyperparams"]

CONFIG_FILE = "config.yaml"
_MAX_DEPTH = 16


class _Unresolved(Exception):
    """A base config of the `defaults:` chain is missing or unreadable."""


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _read(file: Path) -> dict[str, Any]:
    from starforge.recipes import YAMLError, load_yaml  # the recipes' YAML 1.1 typing; loaded only when read

    try:
        data = load_yaml(file.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, YAMLError) as exc:
        raise _Unresolved(str(exc)) from None
    return data if isinstance(data, dict) else {}


def _chain(file: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
    if len(seen) > _MAX_DEPTH or file in seen:
        raise _Unresolved(f"defaults cycle at {file}")
    data = _read(file)
    defaults = data.get("defaults")
    entries = [defaults] if isinstance(defaults, str) else defaults if isinstance(defaults, list) else []
    merged: dict[str, Any] = {}
    for item in entries:
        if not isinstance(item, str) or item.strip() in ("", "_self_"):
            continue
        base = (file.parent / item.strip()).resolve()
        if not base.is_file() and base.suffix not in (".yaml", ".yml"):
            base = base.with_name(base.name + ".yaml")
        if not base.is_file():
            raise _Unresolved(f"{item} not found")
        merged = _merge(merged, _chain(base, (*seen, file)))
    return _merge(merged, {k: v for k, v in data.items() if k != "defaults"})


def read_config(exp_dir: Path, *, resolve: bool = True) -> dict[str, Any]:
    """Return the experiment's config: resolved through `defaults:` if possible, else the file as written ({} if none)."""
    file = Path(exp_dir) / CONFIG_FILE
    if not file.is_file():
        return {}
    if resolve:
        try:
            return _chain(file.resolve(), ())
        except _Unresolved:
            pass
    try:
        return {k: v for k, v in _read(file).items() if k != "defaults"}
    except _Unresolved:
        return {}


def config_lookup(config: dict[str, Any], path: str) -> tuple[bool, Any]:
    """Return `(found, value)` for a dotted `path`: a flat key first, then nested mappings (null counts as set)."""
    if path in config:
        return True, config[path]
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def config_hyperparams(config: dict[str, Any], recipe: Recipe, framework_version: str) -> dict[str, Any]:
    """Return `{name: value}` for each declared parameter whose default the config's value at its path would lose to.

    Only a parameter with a default is returned (one without is never filled in, so the config stands), and only when
    the config sets a different value that the parameter accepts; a null, or a refused value (`sf validate` reports
    those), is left to the config.
    """
    from starforge.recipes import check_value

    out: dict[str, Any] = {}
    for name, param in recipe.params.items():
        path = param.path_for(framework_version)
        if not path:
            continue
        found, value = config_lookup(config, path)
        if not found or value is None or param.default is None or _same(value, param.default):
            continue
        if not check_value(param, value, f"spec.hyperparams.{name}"):
            out[name] = value
    return out


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                             and not isinstance(a, bool) and not isinstance(b, bool) and a == b)


def submitted_hyperparams(exp_dir: Path, recipe: Recipe, framework_version: str,
                          sets: Mapping[str, Any]) -> dict[str, Any]:
    """Return the hyperparameters a submission sends before defaults: the config's values, then `--set` over them."""
    return {**config_hyperparams(read_config(exp_dir), recipe, framework_version), **sets}
