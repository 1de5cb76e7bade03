"""The launch plan (`.starforge/launch.json`, `forge/launch/v1`): read it and report every malformed field at once."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from starforge.contract import Problem, check_digest, check_recipe_id, check_safe_segment, loads, type_name

__all__ = [
    "CONFIG_MODES",
    "PLAN_API_VERSION",
    "ArtifactGlobs",
    "ConfigPlan",
    "Entrypoint",
    "LaunchPlan",
    "Override",
    "OverrideValue",
    "PlanFramework",
    "PlanRecipe",
    "parse_plan",
    "read_plan",
]

PLAN_API_VERSION = "forge/launch/v1"
# config mode -> how an override is rendered: "assign" (`path=value`), "flag" (`--path value`), None (cannot be)
CONFIG_MODES: Mapping[str, str | None] = {
    "dot-overrides": "assign",
    "hydra-overrides": "assign",
    "cli-flags": "flag",
    "cli-args": "flag",
    "trl-yaml": None,
    "pytorch-yaml": None,
}
# Problem codes not yet in `starforge.contract.CODES` (requested from the contract owners).
UNSUPPORTED_CONFIG_MODE = "unsupported_config_mode"
INVALID_ENV_NAME = "invalid_env_name"

OverrideValue = str | int | float | bool
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ROOT = "launch"


@dataclass(frozen=True, slots=True)
class PlanRecipe:
    """The recipe the console resolved: id, version and bundle digest."""

    name: str
    version: str
    digest: str


@dataclass(frozen=True, slots=True)
class PlanFramework:
    """The framework and runtime variant the console resolved."""

    kind: str
    version: str
    runtime_id: str = ""


@dataclass(frozen=True, slots=True)
class Entrypoint:
    """The recipe entrypoint the argv was built from (informational)."""

    kind: str = ""
    value: str = ""


@dataclass(frozen=True, slots=True)
class Override:
    """One framework override: a config path and its typed value."""

    path: str
    value: OverrideValue


@dataclass(frozen=True, slots=True)
class ConfigPlan:
    """How hyperparameters reach the framework: the config mode, the config file and the overrides to apply."""

    mode: str = ""
    path: str = ""
    overrides: tuple[Override, ...] = ()


@dataclass(frozen=True, slots=True)
class ArtifactGlobs:
    """Globs, relative to `FORGE_OUT_DIR`, of what the job leaves behind, and the format of each artifact kind."""

    checkpoints: tuple[str, ...] = ()
    logs: tuple[str, ...] = ()
    exports: tuple[str, ...] = ()
    evaluations: tuple[str, ...] = ()
    formats: Mapping[str, str] = field(default_factory=dict)

    def groups(self) -> list[tuple[str, tuple[str, ...]]]:
        """Return `(artifact kind, globs)` in registration order: checkpoints, exports, evaluations, logs."""
        return [
            ("checkpoint", self.checkpoints),
            ("hf_export", self.exports),
            ("eval_report", self.evaluations),
            ("log", self.logs),
        ]


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """What `forge-launch` starts: identity to verify, argv template, overrides, extra env and artifact globs."""

    run_id: str
    recipe: PlanRecipe
    framework: PlanFramework
    argv: tuple[str, ...]
    entrypoint: Entrypoint = Entrypoint()
    config: ConfigPlan = ConfigPlan()
    env: Mapping[str, str] = field(default_factory=dict)
    artifacts: ArtifactGlobs = ArtifactGlobs()
    api_version: str = PLAN_API_VERSION


def read_plan(path: Path) -> tuple[LaunchPlan | None, list[Problem]]:
    """Return the plan stored at `path` and every problem found; never raises on a missing or malformed file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [
            Problem(
                _ROOT,
                "missing_field",
                f"the launch plan {path} does not exist",
                "the console writes .starforge/launch.json before starting the job",
            )
        ]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem(_ROOT, "invalid_json", f"cannot read the launch plan {path}: {exc}")]
    try:
        doc = loads(text)
    except ValueError as exc:
        return None, [Problem(_ROOT, "invalid_json", f"the launch plan {path} is not valid JSON: {exc}")]
    return parse_plan(doc)


def parse_plan(doc: Any) -> tuple[LaunchPlan | None, list[Problem]]:
    """Return the plan built from a decoded JSON document and every problem found, in document order."""
    r = _Reader()
    root = r.obj(doc, _ROOT, required=True)
    if root is None:
        return None, r.problems
    api = r.text(root, "apiVersion", required=True)
    if api is not None and api != PLAN_API_VERSION:
        r.bad(
            "apiVersion",
            "unsupported_api_version",
            f"must be {PLAN_API_VERSION}, got {api!r}",
            "the console and forge-launch disagree on the plan format: upgrade the job image",
        )
    run_id = r.text(root, "run_id", required=True)
    if run_id:
        r.problems.extend(check_safe_segment(run_id, f"{_ROOT}.run_id", "run id"))
    recipe = _recipe(r, root)
    framework = _framework(r, root)
    entrypoint = _entrypoint(r, root)
    argv = _argv(r, root)
    config = _config(r, root)
    env = _env(r, root)
    artifacts = _artifacts(r, root)
    if r.problems:
        return None, r.problems
    assert run_id is not None and recipe and framework and argv is not None
    return LaunchPlan(run_id, recipe, framework, argv, entrypoint, config, env, artifacts), []


class _Reader:
    """Collects problems while reading typed values out of JSON objects; field paths start at `launch`."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def bad(self, where: str, code: str, message: str, hint: str = "") -> None:
        self.problems.append(
            Problem(where if where.startswith(_ROOT) else f"{_ROOT}.{where}", code, message, hint)
        )

    def obj(self, value: Any, where: str, *, required: bool = False) -> dict[str, Any] | None:
        if value is None:
            if required:
                self.bad(where, "missing_field", "is required")
            return None
        if not isinstance(value, dict):
            self.bad(where, "not_an_object", f"must be a JSON object, got {type_name(value)}")
            return None
        return value

    def text(
        self, parent: dict[str, Any], key: str, *, where: str = "", required: bool = False
    ) -> str | None:
        where = where or key
        value = parent.get(key)
        if value is None or (required and value == ""):
            if required:
                self.bad(where, "missing_field", "is required")
            return None
        if not isinstance(value, str):
            self.bad(where, "not_a_string", f"must be a JSON string, got {type_name(value)}")
            return None
        return value

    def strings(self, parent: dict[str, Any], key: str, where: str) -> tuple[str, ...] | None:
        value = parent.get(key)
        if value is None:
            return ()
        if not isinstance(value, list):
            self.bad(where, "not_a_list", f"must be a JSON array, got {type_name(value)}")
            return None
        ok = True
        for i, item in enumerate(value):
            if not isinstance(item, str):
                self.bad(f"{where}.{i}", "not_a_string", f"must be a JSON string, got {type_name(item)}")
                ok = False
        return tuple(value) if ok else None


def _recipe(r: _Reader, root: dict[str, Any]) -> PlanRecipe | None:
    obj = r.obj(root.get("recipe"), "recipe", required=True)
    if obj is None:
        return None
    before = len(r.problems)
    name = r.text(obj, "name", where="recipe.name", required=True)
    if name:
        r.problems.extend(check_recipe_id(name, f"{_ROOT}.recipe.name"))
    version = r.text(obj, "version", where="recipe.version", required=True)
    digest = r.text(obj, "digest", where="recipe.digest", required=True)
    if digest:
        r.problems.extend(check_digest(digest, f"{_ROOT}.recipe.digest"))
    if len(r.problems) != before:
        return None
    return PlanRecipe(name or "", version or "", digest or "")


def _framework(r: _Reader, root: dict[str, Any]) -> PlanFramework | None:
    obj = r.obj(root.get("framework"), "framework", required=True)
    if obj is None:
        return None
    before = len(r.problems)
    kind = r.text(obj, "kind", where="framework.kind", required=True)
    if kind:
        r.problems.extend(check_safe_segment(kind, f"{_ROOT}.framework.kind", "framework"))
    version = r.text(obj, "version", where="framework.version", required=True)
    runtime_id = r.text(obj, "runtime_id", where="framework.runtime_id")
    if runtime_id:
        r.problems.extend(check_safe_segment(runtime_id, f"{_ROOT}.framework.runtime_id", "runtime id"))
    if len(r.problems) != before:
        return None
    return PlanFramework(kind or "", version or "", runtime_id or "")


def _entrypoint(r: _Reader, root: dict[str, Any]) -> Entrypoint:
    obj = r.obj(root.get("entrypoint"), "entrypoint")
    if obj is None:
        return Entrypoint()
    kind = r.text(obj, "kind", where="entrypoint.kind")
    value = r.text(obj, "value", where="entrypoint.value")
    return Entrypoint(kind or "", value or "")


def _argv(r: _Reader, root: dict[str, Any]) -> tuple[str, ...] | None:
    if root.get("argv") is None:
        r.bad("argv", "missing_field", "is required", "the console builds argv from the recipe entrypoint")
        return None
    argv = r.strings(root, "argv", "argv")
    if argv == ():
        r.bad(
            "argv",
            "missing_field",
            "must name at least the program to run",
            'e.g. ["{python}", "-m", "starforge.tinyrl.grpo"]',
        )
        return None
    return argv


def _config(r: _Reader, root: dict[str, Any]) -> ConfigPlan:
    obj = r.obj(root.get("config"), "config")
    if obj is None:
        return ConfigPlan()
    mode = r.text(obj, "mode", where="config.mode") or ""
    path = r.text(obj, "path", where="config.path") or ""
    overrides: list[Override] = []
    raw = obj.get("overrides")
    if raw is not None and not isinstance(raw, list):
        r.bad("config.overrides", "not_a_list", f"must be a JSON array, got {type_name(raw)}")
    for i, item in enumerate(raw if isinstance(raw, list) else []):
        override = _override(r, item, f"config.overrides.{i}")
        if override is not None:
            overrides.append(override)
    if mode and mode not in CONFIG_MODES:
        r.bad(
            "config.mode",
            UNSUPPORTED_CONFIG_MODE,
            f"unknown config mode {mode!r}",
            f"use one of {', '.join(CONFIG_MODES)}",
        )
    elif isinstance(raw, list) and raw and CONFIG_MODES.get(mode) is None:
        shown = repr(mode) if mode else "no mode"
        r.bad(
            "config.mode",
            UNSUPPORTED_CONFIG_MODE,
            f"forge-launch cannot apply overrides with {shown}",
            "overrides need dot-overrides, hydra-overrides, cli-flags or cli-args",
        )
    return ConfigPlan(mode, path, tuple(overrides))


def _override(r: _Reader, item: Any, where: str) -> Override | None:
    obj = r.obj(item, where, required=True)
    if obj is None:
        return None
    before = len(r.problems)
    path = r.text(obj, "path", where=f"{where}.path", required=True)
    value = obj.get("value")
    if value is None:
        r.bad(f"{where}.value", "missing_field", "is required")
    elif not isinstance(value, (str, bool, int, float)):
        r.bad(
            f"{where}.value",
            "hyperparameter_type",
            f"must be a string, number or boolean, got {type_name(value)}",
        )
    elif isinstance(value, float) and not math.isfinite(value):
        r.bad(f"{where}.value", "not_finite", f"must be finite, got {value}")
    if len(r.problems) != before or path is None:
        return None
    assert isinstance(value, (str, bool, int, float))
    return Override(path, value)


def _env(r: _Reader, root: dict[str, Any]) -> dict[str, str]:
    obj = r.obj(root.get("env"), "env")
    env: dict[str, str] = {}
    for key, value in (obj or {}).items():
        if not _ENV_NAME.fullmatch(key):
            r.bad(
                f"env.{key}",
                INVALID_ENV_NAME,
                f"{key!r} is not a valid environment variable name",
                "use letters, digits and '_', not starting with a digit",
            )
        elif not isinstance(value, str):
            r.bad(f"env.{key}", "not_a_string", f"must be a JSON string, got {type_name(value)}")
        elif "\x00" in value:
            r.bad(f"env.{key}", "not_a_string", "must not contain a NUL character")
        else:
            env[key] = value
    return env


def _artifacts(r: _Reader, root: dict[str, Any]) -> ArtifactGlobs:
    obj = r.obj(root.get("artifacts"), "artifacts")
    if obj is None:
        return ArtifactGlobs()
    groups: dict[str, tuple[str, ...]] = {}
    for key in ("checkpoints", "logs", "exports", "evaluations"):
        where = f"artifacts.{key}"
        globs = r.strings(obj, key, where) or ()
        for i, pattern in enumerate(globs):
            parts = PurePosixPath(pattern).parts
            if not pattern or pattern.startswith("/") or ".." in parts:
                r.bad(
                    f"{where}.{i}",
                    "path_not_relative",
                    f"{pattern!r} must be a relative glob inside FORGE_OUT_DIR, without '..'",
                )
        groups[key] = globs
    formats: dict[str, str] = {}
    for kind, value in (r.obj(obj.get("formats"), "artifacts.formats") or {}).items():
        if isinstance(value, str):
            formats[kind] = value
        else:
            r.bad(f"artifacts.formats.{kind}", "not_a_string", f"must be a JSON string, got {type_name(value)}")
    return ArtifactGlobs(
        groups["checkpoints"], groups["logs"], groups["exports"], groups["evaluations"], formats
    )

