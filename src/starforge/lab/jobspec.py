"""The JobSpec `sf submit` sends: built from the lab, the lock, the local catalog and the options, then checked.

`build_jobspec` is the only place a submission's spec is assembled; `sf submit`, `sf submit --dry-run` and the MCP
tools call it. It ends with `check_document`, so its verdict is exactly the console's static verdict (stages B-D).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starforge import __version__
from starforge.contract import (
    API_VERSION,
    KIND_TRAINING,
    JobSpec,
    Problem,
    ProfileEntry,
    profile_name,
    resolve_profiles,
)

from .exp_config import submitted_hyperparams
from .lockgate import exp_label, lock_gate
from .paths import experiment_path
from .plugins_lock import select_plugins
from .project import project_name

if TYPE_CHECKING:
    from starforge.recipes import Catalog, Recipe

    from .provenance import GitProvenance

__all__ = ["BuiltSpec", "SubmitOptions", "build_jobspec", "check_recipe_gates", "dataset_split", "experiment_path"]

# Stand-in pool when the profile expressions failed: the rest of the spec is still checked, so every problem is
# reported at once; the spec itself is never returned in that case.
_PLACEHOLDER_POOL = {"name": "all", "nodes": 1, "gpus_per_node": 1}
_SHOWN = 5  # the changed paths a dirty-tree refusal names; the rest are counted


@dataclass(frozen=True)
class SubmitOptions:
    """What the researcher chose on the command line (or an MCP tool call) for one submission."""

    profiles: tuple[str, ...]
    sets: tuple[str, ...] = ()
    image: str = ""
    observability_url: str = ""
    init_from: str = ""
    corpus: str = ""
    train_dataset: str = ""  # REF[:PATH]: a dataset <owner>/<name>@<version>, optionally a file inside it
    val_dataset: str = ""  # REF[:PATH] for spec.data.validation
    plugins: tuple[str, ...] = ()  # ID@VERSION; digests come from the experiment's plugins.lock.json
    then: tuple[str, ...] = ()  # on_success actions (export | eval)
    allow_dirty: bool = False
    validate: bool = True  # --no-validate skips R1/R2/R6 locally only
    framework_version: str = ""
    model: str = ""  # spec.model.base: an HF model id or cluster path (verl, trl and openrlhf need one)


@dataclass(frozen=True)
class BuiltSpec:
    """The outcome: the canonical spec dict (None on problems), every problem and warning, and what goes beside it."""

    spec: dict[str, Any] | None  # the canonical JobSpec dict (to_dict of the parsed spec), None on problems
    problems: list[Problem]
    warnings: list[Problem]
    profile: str  # the bare name sent as X-Forge-Meta.profile
    provenance: Any  # starforge.lab.provenance result (commit, dirty, config_sha)
    exp: str = ""  # the experiment path relative to the lab root (X-Forge-Meta.exp), "" when unknown
    job: JobSpec | None = field(default=None, repr=False)  # the parsed spec, for `starforge.contract.dumps`
    recipe: Recipe | None = field(default=None, repr=False)  # the local catalog's recipe, when the lock named one

    @property
    def ok(self) -> bool:
        """Return True when the spec was built without problems."""
        return self.spec is not None and not self.problems


def dataset_split(flag: str) -> dict[str, str]:
    """Return `{dataset, path?}` for a `--train-dataset`/`--val-dataset` value `REF[:PATH]`, where PATH (after
    the first `:` that follows the version's `@`) names a file inside the dataset; the contract checks both."""
    at = flag.find("@")
    colon = flag.find(":", at + 1 if at >= 0 else 0)
    if colon < 0:
        return {"dataset": flag.strip()}
    ref, path = flag[:colon].strip(), flag[colon + 1:].strip()
    return {"dataset": ref, "path": path} if path else {"dataset": ref}


def _config_fields(exp_dir: Path) -> dict[str, Any]:
    """Return `data.volumes` and `eval` from the experiment's config (jobspec-contract §7.2, §7.3), when present."""
    from .exp_config import read_config

    config = read_config(exp_dir)
    out: dict[str, Any] = {}
    data = config.get("data")
    if isinstance(data, dict) and data.get("volumes") is not None:
        out["volumes"] = data["volumes"]
    if config.get("eval") is not None:
        out["evaluation"] = config["eval"]
    return out


def _document(exp_dir: Path, exp: str, recipe: Recipe, framework_version: str, *, project: str,
              pools: list[dict[str, Any]], roles: dict[str, str], hyperparams: dict[str, Any],
              plugins: list[dict[str, str]], options: SubmitOptions, provenance: GitProvenance | None) -> dict[str, Any]:
    extra = _config_fields(exp_dir)
    data: dict[str, Any] = {}
    for key, flag in (("train", options.train_dataset), ("validation", options.val_dataset)):
        if flag:
            data[key] = dataset_split(flag)
    if options.corpus:
        data["corpus"] = options.corpus
    if "volumes" in extra:
        data["volumes"] = extra["volumes"]
    spec: dict[str, Any] = {
        "recipe": {"name": recipe.id, "version": recipe.version, "digest": recipe.digest(), "plugins": recipe.plugins},
        "source": {"exp": exp},
        "framework": {"kind": recipe.framework, "version": framework_version,
                      "runtime_id": recipe.runtime_id(framework_version), "image": options.image,
                      "observability_url": options.observability_url},
        "model": {key: value for key, value in (("base", options.model), ("init_from", options.init_from)) if value},
        "data": data,
        "resources": {"pools": pools, "roles": roles},
        "hyperparams": hyperparams,
        "lifecycle": {"on_success": list(options.then)},
        "plugins": plugins,
    }
    if "evaluation" in extra:
        spec["evaluation"] = extra["evaluation"]
    prov: dict[str, Any] = {"core_version": __version__}
    if provenance is not None:
        prov.update(git_commit=provenance.git_commit, git_dirty=provenance.git_dirty,
                    config_sha=provenance.config_sha)
    return {"apiVersion": API_VERSION, "kind": KIND_TRAINING,
            "metadata": {"name": exp_dir.name, "project": project}, "spec": spec, "provenance": prov}


def _provenance(root: Path, exp: str, allow_dirty: bool) -> tuple[GitProvenance | None, list[Problem], list[Problem]]:
    from .provenance import ProvenanceError, git_provenance  # git runs a subprocess: `sf validate` never does

    try:
        prov = git_provenance(root, exp)
    except ProvenanceError as exc:
        return None, [Problem("provenance.git_commit", "git_unavailable", str(exc),
                              "jobs record the commit they run from: `git init`, then commit the lab")], []
    if not prov.git_dirty:
        return prov, [], []
    if allow_dirty:
        return prov, [], [Problem("provenance.git_dirty", "git_dirty_allowed",
                                  "the lab has uncommitted changes; the job records git_dirty: true")]
    return prov, [Problem("provenance.git_dirty", "git_dirty",
                          f"the lab has uncommitted changes: {_listed(prov.changes)}",
                          "commit them (git add -A && git commit -m '...'), list what should never be committed "
                          "(downloads, outputs) in .gitignore, or pass --allow-dirty")], []


def _listed(changes: tuple[tuple[str, str], ...]) -> str:
    shown = ", ".join(f"{path} ({state})" for state, path in changes[:_SHOWN])
    more = len(changes) - _SHOWN
    return shown + (f" and {more} more (`git status` lists them)" if more > 0 else "")


def check_recipe_gates(root: Path, exp_dir: Path, rel: str, recipe: Recipe, framework_version: str,
                       options: SubmitOptions, catalog: Catalog) -> tuple[list[Problem], list[Problem]]:
    """Return the problems and warnings the final check of `build_jobspec` reports for `options` (the contract
    and the recipe gates: model, data, image, hyperparameters…) on a stand-in pool, without git or the profile
    registry: what `sf validate` shows, so an experiment that submit would refuse is never "ready"."""
    from starforge.recipes import check_document, parse_set

    project, lab_problems = project_name(root)
    hyperparams, set_problems = parse_set(options.sets)
    doc = _document(exp_dir, rel, recipe, framework_version, project=project or "lab", pools=[dict(_PLACEHOLDER_POOL)],
                    roles={}, hyperparams=submitted_hyperparams(exp_dir, recipe, framework_version, hyperparams),
                    plugins=[], options=options, provenance=None)
    verdict = check_document(doc, catalog, validate=options.validate)
    return [*lab_problems, *set_problems, *verdict.problems], list(verdict.warnings)


def _gpu_settings(job: JobSpec, recipe: Recipe, profiles: Sequence[ProfileEntry]) -> list[Problem]:
    """Return the admission's `needs_gpu` problems for the pools whose series the registry publishes as CPU."""
    from starforge.recipes import gpu_problems

    cpu = {entry.series or entry.name for entry in profiles if entry.cpu}
    series = [pool.series for pool in job.spec.resources.pools if pool.series in cpu]
    return gpu_problems(job.spec.hyperparams, recipe, series, job.spec.framework.version)


def build_jobspec(root: Path, exp: str, options: SubmitOptions, *, profiles: Sequence[ProfileEntry],
                  catalog: Catalog) -> BuiltSpec:
    """Return the JobSpec of experiment `exp` for `options`, or every problem found; never raises on user input.

    Steps: resolve `experiments/<name>`; the lock gate (refusing states refuse, advisories warn); recipe and
    framework version from the lock, version/digest/runtime id from `catalog`; `metadata.name` = the experiment's
    basename, `metadata.project` from starforge.yaml; `--profile` against the console's registry `profiles` with
    the recipe's roles; `--set` typed; optional fields; plugins.lock.json; provenance (a dirty tree is refused
    unless `allow_dirty`); finally `check_document`, whose verdict the console's static stages would repeat, and
    the settings that need a GPU on the series the registry publishes as CPU (admission's `needs_gpu` rule).
    """
    from starforge.recipes import check_document, parse_set

    from .lock_inspection import inspect_lock

    root = Path(root)
    bare = profile_name(options.profiles[0]) if options.profiles else ""
    exp_dir, rel, problems = experiment_path(root, exp)
    if exp_dir is None:
        return BuiltSpec(None, problems, [], bare, None)
    warnings: list[Problem] = []
    inspection = inspect_lock(exp_dir, catalog, __version__)
    gate_problems, gate_warnings = lock_gate(inspection)
    problems += gate_problems
    warnings += gate_warnings
    recipe = inspection.recipe
    framework_version = inspection.framework_version
    wanted = options.framework_version.strip()
    if wanted and recipe is not None and wanted != framework_version:
        label = exp_label(exp_dir)
        problems.append(Problem("--framework-version", "framework_version_unsupported",
                                f"the lock of {label} records framework version {framework_version}, not {wanted}",
                                f"move the lock first: `sf recipe upgrade {label} --framework-version {wanted}` "
                                "(or pass --upgrade-recipe)"))
    project, lab_problems = project_name(root)
    problems += lab_problems
    hyperparams, set_problems = parse_set(options.sets)
    problems += set_problems
    placement, profile_problems = resolve_profiles(options.profiles, profiles, recipe.roles if recipe else ())
    problems += profile_problems
    plugins, plugin_problems = select_plugins(exp_dir, options.plugins)
    problems += plugin_problems
    prov, prov_problems, prov_warnings = _provenance(root, rel, options.allow_dirty)
    job: JobSpec | None = None
    if recipe is not None and not gate_problems:
        pools = [p.to_dict() for p in placement.pools] if placement else [dict(_PLACEHOLDER_POOL)]
        doc = _document(exp_dir, rel, recipe, framework_version, project=project, pools=pools,
                        roles=dict(placement.roles) if placement else {},
                        hyperparams=submitted_hyperparams(exp_dir, recipe, framework_version, hyperparams),
                        plugins=plugins, options=options, provenance=prov)
        verdict = check_document(doc, catalog, validate=options.validate)
        problems += verdict.problems
        warnings += verdict.warnings
        job = verdict.spec
        if job is not None:
            problems += _gpu_settings(job, recipe, profiles)
    problems += prov_problems
    warnings += prov_warnings
    profile = placement.profile if placement else bare
    if problems or job is None:
        return BuiltSpec(None, problems, warnings, profile, prov, rel, None, recipe)
    return BuiltSpec(job.to_dict(), [], warnings, profile, prov, rel, job, recipe)
