"""`recipe.lock.json` (recipes-and-locks §9): read v2/v3/v4, write v4 atomically, build the expected lock, diff two.

Inspection states (§10) are in `lock_inspection`; `sf recipe upgrade` (§11) is in `upgrade`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starforge import __version__

from .exp_config import config_lookup, read_config

if TYPE_CHECKING:
    from starforge.recipes import Recipe

__all__ = [
    "DIFF_FIELDS",
    "LOCK_FILE",
    "LOCK_V2",
    "LOCK_V3",
    "LOCK_V4",
    "binding_breaks",
    "compute_bindings",
    "expected_lock",
    "lock_diffs",
    "lock_text",
    "normalise_lock",
    "read_lock",
    "read_method_file",
    "write_lock",
]

LOCK_FILE = "recipe.lock.json"
METHOD_FILE = "method"
LOCK_V2, LOCK_V3, LOCK_V4 = "forge/recipe-lock/v2", "forge/recipe-lock/v3", "forge/recipe-lock/v4"
_SUPPORTED = (LOCK_V2, LOCK_V3, LOCK_V4)
DIFF_FIELDS = ("apiVersion", "recipe.name", "recipe.version", "recipe.digest", "recipe.manifest_digest",
               "recipe.template_digest", "framework.kind", "framework.version", "framework.runtime_id", "requires.core")


def read_lock(exp_dir: Path) -> tuple[dict[str, Any] | None, str]:
    """Return the experiment's lock object, or None and why it cannot be used (missing, not JSON, unsupported)."""
    file = Path(exp_dir) / LOCK_FILE
    try:
        text = file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None, f"no {LOCK_FILE} in {exp_dir}"
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{LOCK_FILE} cannot be read: {exc}"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, f"{LOCK_FILE} is not valid JSON: {exc}"
    if not isinstance(data, dict):
        return None, f"{LOCK_FILE} is not a JSON object"
    if data.get("apiVersion") not in _SUPPORTED:
        return None, f"{LOCK_FILE} has unsupported apiVersion {data.get('apiVersion')!r} (v2, v3 and v4 are read)"
    return data, ""


def read_method_file(exp_dir: Path) -> str:
    """Return the recipe id of a legacy `method` file (first line, trimmed), or ""."""
    try:
        return (Path(exp_dir) / METHOD_FILE).read_text(encoding="utf-8-sig").strip().splitlines()[0].strip()
    except (OSError, UnicodeDecodeError, IndexError):
        return ""


def lock_text(lock: dict[str, Any]) -> str:
    """Return the file form of a lock: sorted keys, two-space indent, non-ASCII kept, trailing newline."""
    return json.dumps(lock, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def write_lock(exp_dir: Path, lock: dict[str, Any]) -> Path:
    """Write `lock` to `<exp_dir>/recipe.lock.json` atomically (`recipe.lock.json.tmp`, then rename)."""
    file = Path(exp_dir) / LOCK_FILE
    tmp = file.with_name(LOCK_FILE + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(lock_text(lock))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, file)
    return file


def _text(value: Any) -> str:
    if value is None or isinstance(value, (dict, list)):
        return ""
    return str(value).strip()


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _section(lock: dict[str, Any], key: str) -> dict[str, Any]:
    return _object(lock.get(key))


def normalise_lock(lock: dict[str, Any]) -> dict[str, Any]:
    """Return the comparable form (§9.2): the diff fields as trimmed strings, plus `bindings` for v4 (else None)."""
    recipe, framework, requires = _section(lock, "recipe"), _section(lock, "framework"), _section(lock, "requires")
    api = _text(lock.get("apiVersion"))
    out = {
        "apiVersion": api,
        "recipe.name": _text(recipe.get("name")),
        "recipe.version": _text(recipe.get("version")),
        "recipe.digest": _text(recipe.get("digest")),
        "recipe.manifest_digest": _text(recipe.get("manifest_digest")),
        "recipe.template_digest": _text(recipe.get("template_digest")),
        "framework.kind": _text(framework.get("kind")),
        "framework.version": _text(framework.get("version")),
        "framework.runtime_id": _text(framework.get("runtime_id")),
        "requires.core": _text(requires.get("core")),
        "bindings": _section(lock, "bindings") if api == LOCK_V4 else None,
    }
    if api == LOCK_V2:
        out["framework.kind"] = _text(recipe.get("framework"))
        out["framework.version"] = _text(recipe.get("framework_version"))
    return out


def compute_bindings(recipe: Recipe, framework_version: str, exp_dir: Path | None) -> dict[str, Any]:
    """Return `bindings`: the entrypoint and, sorted by name, each parameter with a path the config sets."""
    entry = recipe.entrypoint_for(framework_version)
    config = read_config(exp_dir) if exp_dir is not None else {}
    params: dict[str, dict[str, str]] = {}
    for name in sorted(recipe.params):
        param = recipe.params[name]
        path = param.path_for(framework_version)
        if path and config_lookup(config, path)[0]:
            params[name] = {"path": path, "type": param.type}
    return {"entrypoint": {"kind": entry.kind, "value": entry.value}, "params": params}


def expected_lock(recipe: Recipe, framework_version: str, exp_dir: Path | None, *,
                  core_version: str = __version__) -> dict[str, Any]:
    """Return the v4 lock that would be written now for `recipe` at `framework_version` (§9.1)."""
    return {
        "apiVersion": LOCK_V4,
        "bindings": compute_bindings(recipe, framework_version, exp_dir),
        "created_by": {"core_version": core_version},
        "framework": {"kind": recipe.framework, "runtime_id": recipe.runtime_id(framework_version),
                      "version": framework_version},
        "recipe": {"digest": recipe.digest(), "manifest_digest": recipe.manifest_digest, "name": recipe.id,
                   "template_digest": recipe.template_digest, "version": recipe.version},
        "requires": {"core": recipe.requires_core},
    }


def _binding_rows(bindings: dict[str, Any] | None) -> dict[str, str]:
    if bindings is None:
        return {}
    rows: dict[str, str] = {}
    entry = _object(bindings.get("entrypoint"))
    if entry:
        rows["bindings.entrypoint"] = f"{_text(entry.get('kind'))}:{_text(entry.get('value'))}"
    for name, record in sorted(_object(bindings.get("params")).items()):
        record = _object(record)
        rows[f"bindings.params.{name}"] = f"{_text(record.get('path'))} ({_text(record.get('type'))})"
    return rows


def lock_diffs(locked: dict[str, Any], current: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Return `(field, locked, current)` for every differing field of two normalised locks, in §9.2 order.

    Bindings (v4 locks only) are compared entry by entry: `bindings.entrypoint`, then `bindings.params.<name>`
    (shown as `path (type)`; empty when one side lacks the parameter).
    """
    diffs = [(f, locked[f], current[f]) for f in DIFF_FIELDS if locked[f] != current[f]]
    if locked.get("bindings") is not None:
        old, new = _binding_rows(locked["bindings"]), _binding_rows(current.get("bindings") or {})
        keys = sorted(set(old) | set(new), key=lambda k: (k != "bindings.entrypoint", k))
        diffs += [(k, old.get(k, ""), new.get(k, "")) for k in keys if old.get(k, "") != new.get(k, "")]
    return diffs


def binding_breaks(locked: dict[str, Any], recipe: Recipe, framework_version: str) -> list[str]:
    """Return why a normalised lock's recorded bindings no longer hold for `recipe` (§10 state 4), one line each.

    A recorded parameter that is gone, moved to another path or changed type breaks, as does a different
    entrypoint; a value the lock never recorded (empty) is an unknown, not a break.
    """
    bindings = _object(locked.get("bindings"))
    breaks: list[str] = []
    for name, item in _object(bindings.get("params")).items():
        record = _object(item)
        param = recipe.params.get(name)
        if param is None:
            breaks.append(f"parameter {name} no longer exists")
            continue
        path, kind = _text(record.get("path")), _text(record.get("type"))
        now = param.path_for(framework_version)
        if path and now and path != now:
            breaks.append(f"parameter {name} moved from {path} to {now}")
        if kind and kind != param.type:
            breaks.append(f"parameter {name} changed type from {kind} to {param.type}")
    entry = _object(bindings.get("entrypoint"))
    kind, value = _text(entry.get("kind")), _text(entry.get("value"))
    now_entry = recipe.entrypoint_for(framework_version)
    if kind and value and (kind, value) != (now_entry.kind, now_entry.value):
        breaks.append(f"the entrypoint changed from {kind}:{value} to {now_entry.kind}:{now_entry.value}")
    return breaks
