"""Compile a job's launch plan and prepare its run directory: decisions here, execution in `forge-launch`.

`compile_plan` turns the admitted spec and its recipe into a `starforge.wire.LaunchPlan` (entrypoint, argv, config
overrides by declared path, plan environment, artifact globs), written as `.starforge/launch.json`. `prepare_run`
lays out `runs/<user>/<exp>/<run_id>/{work,out,logs}`, unpacks the bundle into `work/` as hostile input, writes the
spec and the plan under `work/.starforge/`, copies plugins in, names the read-only inputs the executor mounts (corpus,
init_from checkpoint, datasets, a cluster-path base model, framework checkout), and builds the job's environment
with `starforge.contract.spec_to_env` — the single spec-to-environment mapping. Every path the job is told about
is a path of the executor's job view (`JobPaths`): inside the sandbox, none of them names the console's state folder.

A job runs `forge-launch` on its runtime's interpreter: a built runtime's (`runtimes.JobRuntime`: its venv, with
the StarForge copy on PYTHONPATH), else the console's own; the plan's `{python}` is that interpreter. Every job
gets its account's hub cache (`HF_HOME`, `<runtimes.hub_cache>/<console identity>/<user>`) read-write.
"""

from __future__ import annotations

import datetime
import json
import logging
import math
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bundle import BundleLimits, UnsafeBundle, extract_bundle
from ..contract import Binding, BindingError, JobSpec, dumps, is_cluster_path, spec_to_env
from ..engines import JobPaths, LaunchRequest, Limits, Mount, PoolShape
from ..engines.runtimes import JobRuntime
from ..recipes import Recipe, param_overrides
from ..safeyaml import YamlRefused, load_yaml_bounded
from ..wire import (
    INGEST_ROOT,
    JOBSPEC_FILE,
    PLAN_FILE,
    PYTHON_PLACEHOLDER,
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
from .services.context import Runtime
from .services.jobs.bundles import bundle_path
from .services.jobs.model_paths import resolve_model_folder

__all__ = ["Inputs", "LaunchFailure", "compile_plan", "job_inputs", "prepare_run", "run_dir_of"]

log = logging.getLogger("starforge.console")

_ENV_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "PYTHONPATH", "VIRTUAL_ENV", "SSL_CERT_FILE")
INIT_FROM_INPUT = "init_from"


class LaunchFailure(RuntimeError):
    """A job that cannot be launched as admitted (a permanent failure, recorded as the job's reason)."""


@dataclass(frozen=True)
class Inputs:
    """What the console resolved for the launch: the init_from path, data directories and plugin directories."""

    init_from: str = ""
    corpus: str = ""
    plugins: tuple[tuple[str, str], ...] = ()  # (leaf, directory)
    train_data: str = ""  # the training dataset's folder (spec.data.train.dataset), shown read-only
    val_data: str = ""  # the validation dataset's folder (spec.data.validation.dataset), shown read-only
    model: str = ""  # a registered base model's folder (spec.model.base as <owner>/<name>@<version>), read-only


def _asset(resolved: dict[str, Any], field: str) -> str:
    return next((path for key, path in resolved.get("assets", {}).items()
                 if key.startswith(f"{field}=") and path), "")


def job_inputs(spec: JobSpec, resolved: dict[str, Any]) -> Inputs:
    """Return the launch inputs of a job from what admission resolved (`jobs.resolved_json`)."""
    plugins = tuple((p.leaf, path) for p, path in zip(spec.spec.plugins, resolved.get("plugins", []), strict=False)
                    if path)
    return Inputs(init_from=resolved.get("init_from", ""), corpus=_asset(resolved, "spec.data.corpus"),
                  plugins=plugins, train_data=_asset(resolved, "spec.data.train.dataset"),
                  val_data=_asset(resolved, "spec.data.validation.dataset"),
                  model=_asset(resolved, "spec.model.base"))


def run_dir_of(state_dir: Path, username: str, exp: str, run_id: str) -> Path:
    """Return `<state>/runs/<user>/<exp basename>/<run_id>`."""
    return state_dir / "runs" / username / exp.rstrip("/").rsplit("/", 1)[-1] / run_id


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
        entrypoint=Entrypoint(kind, entry_value),
        argv=tuple(argv),
        config=ConfigPlan(mode, config_path, tuple(overrides), document, bindings),
        env=env,
        artifacts=_artifact_globs(recipe.artifacts),
    )


_MAX_CONFIG_BYTES = 1024 * 1024


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


def _producing_out(state_dir: Path, path: Path) -> Path | None:
    """Return `<state>/runs/<user>/<exp>/<run>/out` when `path` (links resolved) lies inside it, else None."""
    runs = state_dir.resolve() / "runs"
    real = path.resolve()
    try:
        parts = real.relative_to(runs).parts
    except ValueError:
        return None
    if len(parts) < 4 or parts[3] != "out":
        return None
    return runs.joinpath(*parts[:4])


# `del sys.path[0]` first: the working directory is the job's bundle, which must not shadow the runner
_RUNNER = "import sys; del sys.path[0]; from starforge.runner.launch import main; sys.exit(main())"


def _runner_command(runtime: JobRuntime | None) -> tuple[str, ...]:
    if runtime is not None:
        return (runtime.python, "-c", _RUNNER)
    script = Path(sys.executable).with_name("forge-launch")
    if script.is_file():
        return (str(script),)
    return (sys.executable, "-c", _RUNNER)


def _base_env(paths: JobPaths, runtime: JobRuntime | None) -> dict[str, str]:
    env = {key: os.environ[key] for key in _ENV_KEEP if key in os.environ}
    if paths.home:
        env["HOME"] = paths.home
    if paths.tmp:
        env["TMPDIR"] = paths.tmp
    env["PYTHONUNBUFFERED"] = "1"
    if runtime is not None:  # the runtime's venv first on PATH, and the StarForge copy it imports
        env["VIRTUAL_ENV"] = str(runtime.venv)
        env["PATH"] = f"{runtime.venv}/bin:{env.get('PATH', '/usr/bin:/bin')}"
        env["PYTHONPATH"] = runtime.pythonpath
    return env


def _hub_cache(rt: Runtime, username: str, paths: JobPaths) -> Mount:
    """Return the account's hub cache (created on first use), shown read-write to its jobs only.

    It lies at `<runtimes.hub_cache>/<console identity>/<user>`: same-named accounts of two consoles of one machine
    never share one."""
    root = rt.settings.runtimes.hub_cache
    try:
        if not root.is_dir():
            root.mkdir(mode=0o700, parents=True)  # one folder per account inside; nobody else on the machine reads them
        folder = root / rt.identity / username
        folder.parent.mkdir(mode=0o700, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        log.error("the hub cache %s cannot hold %s's folder: %s", root, username, exc)
        raise LaunchFailure(f"the account's hub cache cannot be made ({exc.strerror}); an operator sets "
                            "runtimes.hub_cache to a folder the console may write") from exc
    return paths.place_cache("hf", folder)


def _target(mount: Mount | None) -> str:
    return mount.target if mount is not None else ""


def _data_mounts(rt: Runtime, spec: JobSpec, inputs: Inputs, paths: JobPaths) -> dict[str, Mount | None]:
    """Return the read-only mounts of the job's model and data: `model` (a cluster-path base model, asked again
    under the console's `model_roots` and bound to its root, or a registered model's folder), `train` and
    `validation` (dataset folders)."""
    found: dict[str, Mount | None] = {"model": None, "train": None, "validation": None}
    base = spec.spec.model.base
    if base and is_cluster_path(base):
        folder = resolve_model_folder(base, rt.settings.model_roots, rt.settings.state_dir)
        if not folder.ok:
            raise LaunchFailure(f"the base model cannot be shown to the job: {folder.refusal}")
        found["model"] = paths.place("model", Path(folder.path), within=Path(folder.root))
    for key, folder_path in (("model", inputs.model), ("train", inputs.train_data), ("validation", inputs.val_data)):
        if folder_path:
            if not Path(folder_path).is_dir():
                what = "base model" if key == "model" else f"{key} dataset"
                raise LaunchFailure(f"the {what}'s files are gone from the console; push it again")
            found[key] = paths.place(key if key == "model" else f"data-{key}", Path(folder_path))
    return found


def _pool_shapes(pools: tuple[Any, ...], devices: Mapping[str, int]) -> tuple[PoolShape, ...]:
    """Return the admitted pools with their series (a pool that names none has the job's only series)."""
    only = next(iter(devices)) if len(devices) == 1 else ""
    return tuple(PoolShape(p.series or only, p.nodes, p.gpus_per_node) for p in pools)


def prepare_run(
    rt: Runtime, *, spec: JobSpec, recipe: Recipe, run_id: str, username: str, profile: str, package_sha: str,
    inputs: Inputs, run_token: str, job_paths: Callable[[Path], JobPaths], action: str = "", parent_id: str = "",
    devices: dict[str, int] | None = None, limits: Limits | None = None, runtime: JobRuntime | None = None,
) -> LaunchRequest:
    """Lay out the run directory, write the spec and plan, and return what the executor must start (on `runtime`,
    a built one, or on the console's interpreter when None)."""
    run_dir = run_dir_of(rt.settings.state_dir, username, spec.spec.source.exp, run_id)
    paths = job_paths(run_dir)
    work, out, logs = run_dir / "work", run_dir / "out", run_dir / "logs"
    if work.exists():
        shutil.rmtree(work)  # a relaunch after a failed start begins from the admitted bundle again
    for directory in (work, out, logs):
        directory.mkdir(parents=True, exist_ok=True)
    if package_sha:
        try:
            extract_bundle(bundle_path(rt.settings.state_dir, package_sha).read_bytes(), work,
                           BundleLimits(max_bytes=rt.settings.max_bundle_bytes, max_files=rt.settings.max_bundle_files))
        except (OSError, UnsafeBundle) as exc:
            said = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise LaunchFailure(f"the job bundle cannot be unpacked: {said}") from exc
    mounts: list[Mount] = []
    docs_dir = ""
    if inputs.corpus:
        corpus = paths.place("corpus", Path(inputs.corpus))
        mounts.append(corpus)
        docs_dir = corpus.target
    init_from = ""
    if inputs.init_from:
        producing_out = _producing_out(rt.settings.state_dir, Path(inputs.init_from))
        if producing_out is None:
            raise LaunchFailure(f"the init_from checkpoint {spec.spec.model.init_from} is no longer inside its run's "
                                "output folder")
        checkpoint = paths.place(INIT_FROM_INPUT, Path(inputs.init_from), within=producing_out)
        mounts.append(checkpoint)
        init_from = checkpoint.target
    data_mounts = _data_mounts(rt, spec, inputs, paths)
    mounts.extend(m for m in data_mounts.values() if m is not None)
    for leaf, plugin_dir in inputs.plugins:
        target = work / "forge_plugins" / leaf
        if not target.exists():
            shutil.copytree(plugin_dir, target, symlinks=True)
    framework_dir = rt.settings.framework_dirs.get(recipe.framework, "")
    for checkout in {framework_dir, rt.settings.framework_dirs.get("nemo-rl", "")} - {""}:
        if Path(checkout).is_dir():
            mounts.append(Mount(Path(checkout), checkout))  # a framework checkout is seen where it is, read-only
    (work / JOBSPEC_FILE).parent.mkdir(exist_ok=True)
    (work / JOBSPEC_FILE).write_text(dumps(spec), encoding="utf-8")
    plan = compile_plan(spec, recipe, run_id=run_id, work=work, action=action, init_from=init_from,
                        framework_dir=framework_dir)
    (work / PLAN_FILE).parent.mkdir(exist_ok=True)
    (work / PLAN_FILE).write_text(json.dumps(plan.to_dict(), indent=2) + "\n", encoding="utf-8")
    pools = spec.spec.resources.pools
    binding = Binding(
        run_id=run_id, profile=profile, nemo_rl_dir=rt.settings.framework_dirs.get("nemo-rl", ""),
        # the admitted shape is the authoritative topology (jobspec-contract §15 step 2; multi-pool: aggregate)
        num_nodes=sum(p.nodes for p in pools) if pools else None,
        gpus_per_node=max(p.gpus_per_node for p in pools) if pools else None,
        storage_root=paths.storage_root, docs_dir=docs_dir, passthrough=dict(rt.settings.passthrough_env),
        model_dir=_target(data_mounts["model"]), train_data_dir=_target(data_mounts["train"]),
        val_data_dir=_target(data_mounts["validation"]),
        ingest_endpoint=f"{rt.settings.base_url}{INGEST_ROOT}", ingest_token=run_token, train_run_id=parent_id,
    )
    try:
        env = {**_base_env(paths, runtime), **spec_to_env(spec, binding)}
    except BindingError as exc:
        raise LaunchFailure(f"this deployment cannot run the job: {exc}") from exc
    hub = _hub_cache(rt, username, paths)
    env["HF_HOME"] = hub.target  # always the account's own: a shared HF_HOME would let one user's job poison another's
    env["FORGE_WORK_DIR"] = paths.work
    env["FORGE_EXP_DIR"] = f"{paths.work}/{spec.spec.source.exp.rstrip('/')}"  # the custom/custom template needs it
    argv = (*_runner_command(runtime), "--workdir", paths.work)
    return LaunchRequest(run_id=run_id, run_dir=run_dir, argv=argv, env=env, cwd=paths.work,
                         devices=dict(devices or {}), mounts=tuple(mounts), limits=limits or Limits(),
                         owner=username, runtime=runtime.paths if runtime else (), caches=(hub,),
                         pools=_pool_shapes(pools, devices or {}),
                         image=spec.spec.framework.image, framework=recipe.framework)
