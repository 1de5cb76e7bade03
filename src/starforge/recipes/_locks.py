"""`recipe.lock.json` (recipes-and-locks §9-§10): read v2/v3/v4, write v4 atomically, compare and inspect."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starforge import __version__

from ._config import config_lookup, read_config
from ._core import UPGRADE_CLIENT, satisfies, too_old
from ._values import as_object

if TYPE_CHECKING:
    from ._catalog import Catalog
    from ._recipe import Recipe

__all__ = [
    "DIFF_FIELDS",
    "LABELS",
    "LOCK_FILE",
    "LOCK_V4",
    "LockInspection",
    "expected_lock",
    "inspect_lock",
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
_IDENTITY = ("recipe.name", "framework.kind", "framework.runtime_id")
LABELS = {"current": "", "compatible": "drifted", "upgrade_advised": "behind", "incompatible": "incompatible",
          "runtime_removed": "runtime gone", "sdk_incompatible": "sdk mismatch", "malformed": "unreadable"}
_ADMITS = frozenset({"current", "compatible", "upgrade_advised"})


@dataclass(frozen=True)
class LockInspection:
    """The state of an experiment's lock against the local catalog, its diffs and the message to show."""

    state: str
    admits: bool
    diffs: list[tuple[str, str, str]]
    message: str
    label: str
    exp_dir: Path
    recipe_id: str = ""
    framework_version: str = ""
    lock: dict[str, Any] | None = field(default=None, repr=False)
    recipe: Recipe | None = field(default=None, repr=False, compare=False)

    def admits_under(self, strict: bool = False) -> bool:
        """Return whether a submission may proceed: v4 semantics, or only `current` with `strict` (§10.1)."""
        return self.state == "current" if strict else self.admits

    @property
    def strict_state(self) -> str:
        """Return the brief-era state (§10.1): any drift is `recipe_stale`."""
        return "recipe_stale" if self.state in ("incompatible", "upgrade_advised", "compatible") else self.state


def exp_label(exp_dir: Path) -> str:
    """Return how to name the experiment in hints: `<name>`, or `smoke/<name>` for smoke experiments."""
    return f"smoke/{exp_dir.name}" if exp_dir.parent.name == "smoke" else exp_dir.name


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


def _section(lock: dict[str, Any], key: str) -> dict[str, Any]:
    value = lock.get(key)
    return value if isinstance(value, dict) else {}


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
    entry = as_object(bindings.get("entrypoint"))
    if entry:
        rows["bindings.entrypoint"] = f"{_text(entry.get('kind'))}:{_text(entry.get('value'))}"
    for name, record in sorted(as_object(bindings.get("params")).items()):
        record = as_object(record)
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


def _binding_breaks(locked: dict[str, Any], recipe: Recipe, framework_version: str) -> list[str]:
    bindings = as_object(locked.get("bindings"))
    breaks: list[str] = []
    for name, item in as_object(bindings.get("params")).items():
        record = as_object(item)
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
    entry = as_object(bindings.get("entrypoint"))
    kind, value = _text(entry.get("kind")), _text(entry.get("value"))
    now_entry = recipe.entrypoint_for(framework_version)
    if kind and value and (kind, value) != (now_entry.kind, now_entry.value):
        breaks.append(f"the entrypoint changed from {kind}:{value} to {now_entry.kind}:{now_entry.value}")
    return breaks


def inspect_lock(exp_dir: Path, catalog: Catalog, client_version: str = __version__,
                 requested_recipe: str | None = None) -> LockInspection:
    """Return the lock's state (§10: malformed … current, first that applies), its diffs and the message."""
    exp_dir = Path(exp_dir)
    label = exp_label(exp_dir)

    def result(state: str, message: str, **extra: Any) -> LockInspection:
        return LockInspection(state, state in _ADMITS, extra.pop("diffs", []), message, LABELS[state], exp_dir,
                              **extra)

    lock, error = read_lock(exp_dir)
    if lock is None:
        legacy = read_method_file(exp_dir) if not (exp_dir / LOCK_FILE).exists() else ""
        if legacy:
            error += f" (the legacy method file names {legacy}; `sf recipe upgrade {label}` writes a lock)"
        return result("malformed", error, recipe_id=legacy)
    locked = normalise_lock(lock)
    name = locked["recipe.name"]
    if not name:
        return result("malformed", f"{LOCK_FILE} names no recipe", lock=lock)
    if requested_recipe is not None and requested_recipe.strip() != name:
        return result("malformed", f"the lock records {name}, not the requested {requested_recipe.strip()}",
                      recipe_id=name, lock=lock)
    recipe = catalog.get(name)
    if recipe is None:
        return result("malformed", f"recipe {name} is not in the local catalog", recipe_id=name, lock=lock)
    fv = locked["framework.version"] or recipe.default_version
    extra = {"recipe_id": name, "framework_version": fv, "lock": lock, "recipe": recipe}
    if satisfies(client_version, recipe.requires_core) is not True:
        action = UPGRADE_CLIENT if too_old(client_version, recipe.requires_core) else "use an sf client in that range"
        return result("sdk_incompatible", f"recipe {recipe.id}@{recipe.version} needs core {recipe.requires_core}; "
                                          f"this sf is {client_version} — {action}", **extra)
    if fv not in recipe.framework_versions:
        return result("runtime_removed",
                      f"{recipe.id} no longer has framework version {fv} (available: "
                      f"{', '.join(recipe.framework_versions)}); run `sf recipe upgrade {label} --framework-version "
                      f"<V>` or `--accept-runtime-change` for {recipe.default_version}", **extra)
    expected = normalise_lock(expected_lock(recipe, fv, exp_dir, core_version=client_version))
    diffs = lock_diffs(locked, expected)
    breaks = _binding_breaks(locked, recipe, fv) + [
        f"{f} is {old or '(none)'} in the lock but {new or '(none)'} in the catalog"
        for f, old, new in diffs if f in _IDENTITY and old
    ]
    if breaks:
        return result("incompatible", "; ".join(breaks) + f" — run `sf recipe upgrade {label}`", diffs=diffs, **extra)
    variant = recipe.runtime.versions[fv]
    if variant.deprecated:
        sunset = f" (sunset {variant.sunset})" if variant.sunset else ""
        target = next((v for v, var in recipe.runtime.versions.items() if not var.deprecated), recipe.default_version)
        return result("upgrade_advised", f"{recipe.id} runtime {fv} is deprecated{sunset}; run `sf recipe upgrade "
                                         f"{label} --framework-version {target}`", diffs=diffs, **extra)
    if diffs:
        fields = ", ".join(f for f, _, _ in diffs)
        return result("compatible", f"the lock records an older bundle of {recipe.id} ({fields} differ); "
                                    f"run `sf recipe upgrade {label}` to record the installed one", diffs=diffs, **extra)
    return result("current", "", **extra)
