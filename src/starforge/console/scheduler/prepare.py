"""Prepare a claimed job's run directory and what its engine starts: the launch's files, mounts and environment.

`prepare_run` takes the job as the scheduler loaded it (`claim.ClaimedJob`), lays out
`runs/<user>/<exp>/<run_id>/{work,out,logs}`, unpacks the bundle into `work/` as hostile input, writes the spec
(`starforge.contract.dumps`, the canonical form) and the plan (`plan.compile_plan`) under `work/.starforge/`, copies
plugins in, names the read-only inputs the executor mounts (corpus, init_from checkpoint, datasets, a cluster-path
base model, framework checkout), and builds the job's environment with `starforge.contract.spec_to_env` — the
single spec-to-environment mapping. Every path the job is told about is a path of the executor's job view
(`JobPaths`): inside the sandbox, none of them names the console's state folder.

A job runs `forge-launch` on its runtime's interpreter: a built runtime's (`runtimes.JobRuntime`: its venv, with
the StarForge copy on PYTHONPATH), else the console's own. A job with an image runs in it (`images.UnpackedImage`):
the interpreter and the StarForge copy are shown read-only inside, and the job's environment starts from the
image's (its PATH, after the runtime's venv). Every job gets its account's hub cache (`HF_HOME`,
`<runtimes.hub_cache>/<console identity>/<user>`) read-write.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...bundle import BundleLimits, UnsafeBundle, directory_digest, extract_bundle
from ...contract import Binding, BindingError, JobSpec, dumps, is_cluster_path, spec_to_env
from ...engines import JobPaths, LaunchRequest, Limits, Mount, PoolShape
from ...engines.images import UnpackedImage
from ...engines.runtimes import JobRuntime
from ...recipes import Recipe
from ...wire import (
    ATTEMPT_MARK,
    ATTEMPT_VARIABLE,
    INGEST_ROOT,
    JOBSPEC_FILE,
    PLAN_FILE,
    RESUME_FROM_VARIABLE,
    RESUME_STEP_VARIABLE,
)
from ..services.context import Runtime
from ..services.jobs.attempts import ResumePoint
from ..services.jobs.bundles import bundle_path
from ..services.jobs.model_paths import resolve_model_folder
from ..services.logs import store as log_store
from ..services.registries import benchmark_packs
from ..services.registries.artifacts import shown_path
from .claim import ClaimedJob
from .errors import LaunchFailure
from .plan import compile_plan

__all__ = ["BENCHMARKS_VARIABLE", "Attempt", "Inputs", "job_inputs", "prepare_run", "run_dir_of"]

log = logging.getLogger("starforge.console")

_ENV_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "PYTHONPATH", "VIRTUAL_ENV", "SSL_CERT_FILE")
INIT_FROM_INPUT = "init_from"
BENCHMARKS_VARIABLE = "FORGE_BENCHMARKS"  # JSON: the chosen suites, each with its task and its pack's folder


@dataclass(frozen=True)
class Attempt:
    """Which start of the job this is: its number, the checkpoint it resumes from (None: from the start), and how
    the previous attempt ended ("" for the first)."""

    number: int = 1
    resume: ResumePoint | None = None
    previous: str = ""


@dataclass(frozen=True)
class Inputs:
    """What the console resolved for the launch: the init_from path, data directories and plugin directories."""

    init_from: str = ""
    corpus: str = ""
    plugins: tuple[tuple[str, str], ...] = ()  # (leaf, directory)
    train_data: str = ""  # the training dataset's folder (spec.data.train.dataset), shown read-only
    val_data: str = ""  # the validation dataset's folder (spec.data.validation.dataset), shown read-only
    model: str = ""  # a registered base model's folder (spec.model.base as <owner>/<name>@<version>), read-only


def _asset(resolved: Mapping[str, Any], field: str) -> str:
    return next((path for key, path in resolved.get("assets", {}).items()
                 if key.startswith(f"{field}=") and path), "")


def job_inputs(spec: JobSpec, resolved: Mapping[str, Any]) -> Inputs:
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


_IMAGE_ENV_DROP = frozenset({"HOME", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV", "LD_PRELOAD", "LD_LIBRARY_PATH"})


def _base_env(paths: JobPaths, runtime: JobRuntime | None, image: UnpackedImage | None = None) -> dict[str, str]:
    if image is None:
        env = {key: os.environ[key] for key in _ENV_KEEP if key in os.environ}
    else:  # the image's own environment (its PATH, its locale, CUDA's variables), never the console's
        env = {k: v for k, v in (line.split("=", 1) for line in image.env) if k not in _IMAGE_ENV_DROP}
        env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
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


def _benchmark_mounts(resolved: Mapping[str, Any], paths: JobPaths) -> tuple[list[Mount], str]:
    """Return the read-only mounts of the published packs of the suites admission chose, and `FORGE_BENCHMARKS`
    naming each suite with its task and its pack's folder as the job sees it ("" when the job chose none).

    A builtin suite is not mounted: the job finds the builtin pack in its own copy of StarForge (the runtime's, on
    every engine), which is this console's package; its `path` is "" and `builtin` true."""
    mounts: dict[str, Mount] = {}
    checked: set[str] = set()
    named = []
    for suite in benchmark_packs.chosen_suites(resolved):
        folder = Path(suite.path)
        if suite.pack not in checked:
            if not folder.is_dir():
                raise LaunchFailure(f"the benchmark pack {suite.pack}@{suite.pack_version} is gone from the console")
            if suite.digest and directory_digest(folder) != suite.digest:
                raise LaunchFailure(f"the benchmark pack {suite.pack}@{suite.pack_version} changed since the job "
                                    "was admitted (its digest differs); submit the job again")
            checked.add(suite.pack)
            if not suite.builtin:
                mounts[suite.pack] = paths.place("bench-" + suite.pack.replace("/", "-"), folder)
        named.append({"suite": suite.name, "task": suite.task, "pack": suite.pack, "version": suite.pack_version,
                      "metrics": list(suite.metrics), "builtin": suite.builtin,
                      "path": "" if suite.builtin else mounts[suite.pack].target})
    return list(mounts.values()), json.dumps(named, separators=(",", ":")) if named else ""


def _pool_shapes(pools: tuple[Any, ...], devices: Mapping[str, int]) -> tuple[PoolShape, ...]:
    """Return the admitted pools with their series (a pool that names none has the job's only series)."""
    only = next(iter(devices)) if len(devices) == 1 else ""
    return tuple(PoolShape(p.series or only, p.nodes, p.gpus_per_node) for p in pools)


def _attempt_line(run_id: str, attempt: Attempt) -> str:
    """Return the log line that starts a later attempt: its number, how the last one ended, where it resumes."""
    ended = f" (attempt {attempt.number - 1} {attempt.previous})" if attempt.previous else ""
    if attempt.resume is None:
        start = "starting over: no checkpoint was registered"
    else:
        step = f" (step {attempt.resume.step})" if attempt.resume.step is not None else ""
        start = f"resuming from {attempt.resume.path.name}{step}"
    return f"\n{ATTEMPT_MARK}{attempt.number} of {run_id}{ended}: {start} ────\n"


def prepare_run(
    rt: Runtime, job: ClaimedJob, *, recipe: Recipe, run_token: str, job_paths: Callable[[Path], JobPaths],
    limits: Limits | None = None, runtime: JobRuntime | None = None, attempt: Attempt | None = None,
    image: UnpackedImage | None = None,
) -> LaunchRequest:
    """Lay out the run directory of `job`, write its spec and plan, and return what the executor must start (on
    `runtime`, a built one, or on the console's interpreter when None); a later `attempt` is told where it resumes
    from (`wire._resume`), and its log says which attempt starts."""
    attempt = attempt or Attempt()
    spec, run_id, username, devices = job.spec, job.id, job.username, dict(job.series_gpus)
    inputs = job_inputs(spec, job.resolved)
    run_dir = run_dir_of(rt.settings.state_dir, username, spec.spec.source.exp, run_id)
    paths = job_paths(run_dir)
    work, out, logs = run_dir / "work", run_dir / "out", run_dir / "logs"
    if work.exists():
        shutil.rmtree(work)  # a relaunch after a failed start begins from the admitted bundle again
    for directory in (work, out, logs):
        directory.mkdir(parents=True, exist_ok=True)
    if job.package_sha:
        try:
            extract_bundle(bundle_path(rt.settings.state_dir, job.package_sha).read_bytes(), work,
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
    bench_mounts, benchmarks = _benchmark_mounts(job.resolved, paths)
    mounts.extend(bench_mounts)
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
    # a lifecycle action (export, eval) runs the recipe's entry for it; any other job (a service: `serve`) runs the
    # recipe's own entrypoint
    action = job.action if job.action in recipe.lifecycle else ""
    plan = compile_plan(spec, recipe, run_id=run_id, work=work, action=action, init_from=init_from,
                        framework_dir=framework_dir)
    (work / PLAN_FILE).parent.mkdir(exist_ok=True)
    (work / PLAN_FILE).write_text(json.dumps(plan.to_dict(), indent=2) + "\n", encoding="utf-8")
    pools = spec.spec.resources.pools
    binding = Binding(
        run_id=run_id, profile=job.profile, nemo_rl_dir=rt.settings.framework_dirs.get("nemo-rl", ""),
        # the admitted shape is the authoritative topology (jobspec-contract §15 step 2; multi-pool: aggregate)
        num_nodes=sum(p.nodes for p in pools) if pools else None,
        gpus_per_node=max(p.gpus_per_node for p in pools) if pools else None,
        storage_root=paths.storage_root, docs_dir=docs_dir, passthrough=dict(rt.settings.passthrough_env),
        model_dir=_target(data_mounts["model"]), train_data_dir=_target(data_mounts["train"]),
        val_data_dir=_target(data_mounts["validation"]),
        ingest_endpoint=f"{rt.settings.base_url}{INGEST_ROOT}", ingest_token=run_token, train_run_id=job.parent_id,
    )
    try:
        env = {**_base_env(paths, runtime, image), **spec_to_env(spec, binding)}
    except BindingError as exc:
        raise LaunchFailure(f"this deployment cannot run the job: {exc}") from exc
    hub = _hub_cache(rt, username, paths)
    env["HF_HOME"] = hub.target  # always the account's own: a shared HF_HOME would let one user's job poison another's
    env["FORGE_WORK_DIR"] = paths.work
    env["FORGE_EXP_DIR"] = f"{paths.work}/{spec.spec.source.exp.rstrip('/')}"  # the custom/custom template needs it
    env[ATTEMPT_VARIABLE] = str(attempt.number)
    if benchmarks:
        env[BENCHMARKS_VARIABLE] = benchmarks
    if attempt.resume is not None:
        env[RESUME_FROM_VARIABLE] = shown_path(str(attempt.resume.path), run_dir=run_dir, job_out=paths.out)
        if attempt.resume.step is not None:
            env[RESUME_STEP_VARIABLE] = str(attempt.resume.step)
    if attempt.number > 1:
        log_store.append(rt.logs, run_dir, _attempt_line(run_id, attempt))
    argv = (*_runner_command(runtime), "--workdir", paths.work)
    return LaunchRequest(run_id=run_id, run_dir=run_dir, argv=argv, env=env, cwd=paths.work,
                         devices=devices, mounts=tuple(mounts), limits=limits or Limits(),
                         owner=username, runtime=runtime.paths if runtime else (), caches=(hub,),
                         pools=_pool_shapes(pools, devices),
                         image=spec.spec.framework.image, framework=recipe.framework,
                         image_root=image.root if image is not None else None,
                         image_digest=image.digest if image is not None else "")
