"""Compile a job's launch plan: the decisions of a launch, as `starforge.wire.LaunchPlan`, executed by `forge-launch`.

`compile_plan` turns the admitted spec and its recipe into the plan (entrypoint, argv, config overrides by declared
path, plan environment, artifact globs) that `prepare_run` writes as `.starforge/launch.json`. A job runs
`forge-launch` on its runtime's interpreter; the plan's `{python}` is that interpreter.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...contract import JobSpec
from ...recipes import Recipe, param_overrides
from ...safeyaml import YamlRefused, load_yaml_bounded
from ...wire import (
    PYTHON_PLACEHOLDER,
    WORLD_LAUNCHERS,
    ArtifactGlobs,
    ConfigPlan,
    Entrypoint,
    InputBinding,
    LaunchPlan,
    Override,
    PlanFramework,
    PlanRecipe,
    carries_document,
    entry_shim,
    takes_config_option,
)
from .errors import LaunchFailure

__all__ = ["compile_plan"]


def _argv(spec: JobSpec, recipe: Recipe, work: Path, action: str, framework_dir: str) -> tuple[list[str], str]:
    exp = spec.spec.source.exp
    version = spec.spec.framework.version
    entry = recipe.lifecycle[action] if action else recipe.entrypoint_for(version)
    if entry.experiment_override and (work / exp / entry.experiment_override).is_file():
        return [PYTHON_PLACEHOLDER, f"{exp}/{entry.experiment_override}"], "experiment"
    if entry.kind == "module":
        return [PYTHON_PLACEHOLDER, "-m", entry.value], entry.kind
    if entry.kind == "experiment":
        target = f"{exp}/{entry.value}"
        if entry.value.endswith(".sh"):
            return ["bash", target], entry.kind
        if entry.value.endswith(".py"):
            return [PYTHON_PLACEHOLDER, target], entry.kind
        return [f"./{target}"], entry.kind
    if not framework_dir:
        raise LaunchFailure(
            f"recipe {recipe.id} runs {entry.value} from a {recipe.framework} checkout, and this deployment has none "
            "configured (framework_dirs in the console configuration)"
        )
    return [PYTHON_PLACEHOLDER, str(Path(framework_dir) / entry.value)], entry.kind


def compile_plan(
    spec: JobSpec, recipe: Recipe, *, run_id: str, work: Path, action: str = "", init_from: str = "",
    framework_dir: str = "",
) -> LaunchPlan:
    """Return the launch plan of a job (or of one of its lifecycle actions).

    The job itself gets the recipe's config mode: the experiment's `config.yaml` as `--config` (modes that take
    it), or read here into `config.document` (modes that write or flatten it); the hyperparameters as overrides at
    their paths; the recipe's `adapter_options.bindings` (job input → config path); and, for a mode with an entry
    shim, `{python} -m <shim> <module>`. A lifecycle action runs its entrypoint as it is.
    """
    s = spec.spec
    exp = s.source.exp
    argv, kind = _argv(spec, recipe, work, action, framework_dir)
    entry_value = argv[-1]
    mode = str(recipe.adapter_options.get("config_mode", "") or "") if not action else ""
    config_path = f"{exp}/config.yaml" if (work / exp / "config.yaml").is_file() else ""
    overrides: list[Override] = []
    document: dict[str, Any] | None = None
    bindings: tuple[InputBinding, ...] = ()
    if mode:
        if config_path and takes_config_option(mode) and kind != "experiment":
            argv += ["--config", config_path]
        if carries_document(mode):
            document = _config_document(work / config_path) if config_path else {}
        shim = entry_shim(mode)
        if shim and kind == "module":
            argv[1:2] = ["-m", shim]  # `{python} -m SHIM MODULE`: the shim runs MODULE after installing itself
        overrides = [Override(p, v) for p, v in param_overrides(s.hyperparams, recipe, s.framework.version)]
        init_key = str(recipe.adapter_options.get("init_from_key", "") or "")
        if init_from and init_key:
            overrides.append(Override(init_key, init_from))  # the recipe's configured key
        bindings = _bindings(recipe, skip=init_key if init_from else "")
    env = {"FORGE_INIT_FROM": init_from} if init_from else {}
    if s.framework.observability_url:
        env["FORGE_EXTERNAL_OBSERVABILITY_URL"] = s.framework.observability_url
    return LaunchPlan(
        run_id=run_id,
        action=action,
        recipe=PlanRecipe(s.recipe.name, s.recipe.version, s.recipe.digest),
        framework=PlanFramework(s.framework.kind, s.framework.version, s.framework.runtime_id),
        entrypoint=Entrypoint(kind, entry_value, _launcher(recipe, kind, action)),
        argv=tuple(argv),
        config=ConfigPlan(mode, config_path, tuple(overrides), document, bindings),
        env=env,
        artifacts=_artifact_globs(recipe.artifacts),
    )


_MAX_CONFIG_BYTES = 1024 * 1024


def _launcher(recipe: Recipe, kind: str, action: str) -> str:
    """Return the launcher that starts one world of the job's module entrypoint ("" for anything else)."""
    launcher = str(recipe.adapter_options.get("launcher", "") or "")
    return launcher if not action and kind == "module" and launcher in WORLD_LAUNCHERS else ""


def _config_document(file: Path) -> dict[str, Any]:
    """Return the experiment's config file as JSON values (read with the bounded YAML reader), or fail the launch."""
    where = f"{file.parent.name}/{file.name}"
    try:
        loaded = load_yaml_bounded(file.read_text(encoding="utf-8-sig"), max_bytes=_MAX_CONFIG_BYTES, what=where)
    except (OSError, UnicodeDecodeError, YamlRefused) as exc:
        said = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise LaunchFailure(f"cannot read the experiment's {where}: {said}") from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise LaunchFailure(f"the experiment's {where} must be a mapping of settings, not a {type(loaded).__name__}")
    return dict(_json_config(loaded, where))


def _json_config(value: Any, where: str) -> Any:
    """Return a loaded YAML value as JSON: dates as ISO text, keys as text; non-finite numbers fail the launch."""
    if isinstance(value, dict):
        return {str(k): _json_config(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_json_config(v, f"{where}.{i}") for i, v in enumerate(value)]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        raise LaunchFailure(f"{where} is {value}: a framework config passed by StarForge holds finite numbers only")
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise LaunchFailure(f"{where} holds a {type(value).__name__}, which a launch plan cannot carry")


def _bindings(recipe: Recipe, *, skip: str) -> tuple[InputBinding, ...]:
    """Return the recipe's `adapter_options.bindings` (validated with the manifest), but not the path `skip`."""
    raw = recipe.adapter_options.get("bindings")
    if not isinstance(raw, dict):
        return ()
    return tuple(InputBinding(str(name), str(path)) for name, path in raw.items() if path and path != skip)


def _artifact_globs(section: Mapping[str, Any]) -> ArtifactGlobs:
    """Return the recipe's `artifacts` section (validated with the manifest) as the plan's globs."""
    def globs(key: str) -> tuple[str, ...]:
        value = section.get(key)
        return tuple(value) if isinstance(value, list) else ()

    formats = section.get("formats")
    return ArtifactGlobs(
        checkpoints=globs("checkpoints"), logs=globs("logs"), exports=globs("exports"),
        evaluations=globs("evaluations"), formats=dict(formats) if isinstance(formats, dict) else {},
        version=str(section.get("version") or ""),
    )
