"""Read a launch plan document back into a `LaunchPlan`, reporting every malformed field at once (`launch.…`)."""

from __future__ import annotations

import math
import re
from pathlib import Path, PurePosixPath
from typing import Any

from starforge.contract import Problem, check_digest, check_recipe_id, check_safe_segment, loads, type_name

from ._artifact_kinds import ARTIFACT_GROUPS
from ._config_modes import CONFIG_MODES
from ._inputs import INPUTS
from ._plan import (
    PLAN_FILE,
    PLAN_VERSION,
    WORLD_LAUNCHERS,
    ArtifactGlobs,
    ConfigPlan,
    ConfigValue,
    Entrypoint,
    InputBinding,
    LaunchPlan,
    Override,
    PlanFramework,
    PlanRecipe,
)

__all__ = ["parse_plan", "read_plan"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ROOT = "launch"
_MAX_DEPTH = 32


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
                f"the console writes {PLAN_FILE} before starting the job",
            )
        ]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem(_ROOT, "invalid_json", f"cannot read the launch plan {path}: {exc}")]
    try:
        doc = loads(text)
    except (ValueError, RecursionError) as exc:
        return None, [Problem(_ROOT, "invalid_json", f"the launch plan {path} is not valid JSON: {exc}")]
    return parse_plan(doc)


def parse_plan(doc: Any) -> tuple[LaunchPlan | None, list[Problem]]:
    """Return the plan built from a decoded JSON document and every problem found, in document order."""
    r = _Reader()
    root = r.obj(doc, _ROOT, required=True)
    if root is None:
        return None, r.problems
    api = r.text(root, "apiVersion", required=True)
    if api is not None and api != PLAN_VERSION:
        r.bad(
            "apiVersion",
            "unsupported_api_version",
            f"must be {PLAN_VERSION}, got {api!r}",
            "the console and forge-launch disagree on the plan format: upgrade the job image",
        )
    run_id = r.text(root, "run_id", required=True)
    if run_id:
        r.problems.extend(check_safe_segment(run_id, f"{_ROOT}.run_id", "run id"))
    action = r.text(root, "action") or ""
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
    plan = LaunchPlan(
        run_id=run_id,
        recipe=recipe,
        framework=framework,
        argv=argv,
        action=action,
        entrypoint=entrypoint,
        config=config,
        env=env,
        artifacts=artifacts,
    )
    return plan, []


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
    launcher = r.text(obj, "launcher", where="entrypoint.launcher") or ""
    if launcher and launcher not in WORLD_LAUNCHERS:
        r.bad("entrypoint.launcher", "unknown_launcher", f"unknown launcher {launcher!r}",
              f"use one of {', '.join(WORLD_LAUNCHERS)}, or leave it out for a single process")
    return Entrypoint(kind or "", value or "", launcher)


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
    document = _document(r, obj.get("document"))
    bindings = _bindings(r, obj.get("bindings"))
    if mode and mode not in CONFIG_MODES:
        r.bad(
            "config.mode",
            "unsupported_config_mode",
            f"unknown config mode {mode!r}",
            f"use one of {', '.join(CONFIG_MODES)}",
        )
    elif not mode and ((isinstance(raw, list) and raw) or bindings or document is not None):
        r.bad(
            "config.mode",
            "unsupported_config_mode",
            "forge-launch cannot apply overrides, bindings or a config document without a config mode",
            f"name one of {', '.join(CONFIG_MODES)}",
        )
    return ConfigPlan(mode, path, tuple(overrides), document, bindings)


def _document(r: _Reader, value: Any) -> dict[str, ConfigValue] | None:
    if value is None:
        return None
    obj = r.obj(value, "config.document")
    if obj is None:
        return None
    before = len(r.problems)
    _check_value(r, obj, "config.document", 0)
    return obj if len(r.problems) == before else None


def _check_value(r: _Reader, value: Any, where: str, depth: int) -> None:
    if depth > _MAX_DEPTH:
        r.bad(where, "json_too_deep", f"nests deeper than {_MAX_DEPTH} levels")
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                r.bad(where, "not_a_string", "object keys must be strings")
            else:
                _check_value(r, item, f"{where}.{key}", depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_value(r, item, f"{where}.{i}", depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        r.bad(where, "not_finite", f"must be finite, got {value}")
    elif value is not None and not isinstance(value, (str, bool, int, float)):
        r.bad(where, "hyperparameter_type", f"must be JSON, got {type_name(value)}")


def _bindings(r: _Reader, value: Any) -> tuple[InputBinding, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        r.bad("config.bindings", "not_a_list", f"must be a JSON array, got {type_name(value)}")
        return ()
    out: list[InputBinding] = []
    for i, item in enumerate(value):
        where = f"config.bindings.{i}"
        obj = r.obj(item, where, required=True)
        if obj is None:
            continue
        name = r.text(obj, "input", where=f"{where}.input", required=True)
        target = r.text(obj, "path", where=f"{where}.path", required=True)
        if name is not None and name not in INPUTS:
            r.bad(f"{where}.input", "unknown_input", f"unknown job input {name!r}", f"use one of {', '.join(INPUTS)}")
        elif name is not None and target is not None:
            out.append(InputBinding(name, target))
    return tuple(out)


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
                "invalid_env_name",
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
    version = r.text(obj, "version", where="artifacts.version") or ""
    groups: dict[str, tuple[str, ...]] = {}
    for key in ARTIFACT_GROUPS:
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
        checkpoints=groups["checkpoints"],
        logs=groups["logs"],
        exports=groups["exports"],
        evaluations=groups["evaluations"],
        formats=formats,
        version=version,
    )
