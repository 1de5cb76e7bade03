"""Recipe gates R1-R7 (recipes-and-locks §8, stage D): one function, run by the CLI before upload and at admission."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from starforge.contract import JobSpec, Problem

from ._hyperparams import validate_hyperparams
from ._images import image_reference_error

if TYPE_CHECKING:
    from ._recipe import Recipe

__all__ = ["BENCHMARK_ACTION", "check_gates", "runs_action"]

_URL = re.compile(r"https?://[^\s/?#]+[^\s]*", re.IGNORECASE)
_NEEDS_MODEL_AND_TRAIN = ("verl", "trl", "openrlhf")
_NEEDS_VALIDATION = ("verl", "trl")
_SINGLE_WORLD_LAUNCHERS = ("torchrun", "accelerate")


def check_gates(spec: JobSpec, recipe: Recipe, *, validate: bool = True) -> tuple[JobSpec, list[Problem], list[Problem]]:
    """Return the spec with hyperparameters rebuilt, every R1-R7 problem in rule order, and warnings.

    `validate=False` (the CLI's --no-validate) skips R1, R2 and R6; the console always validates.
    """
    s = spec.spec
    framework_version = s.framework.version
    problems: list[Problem] = []
    warnings: list[Problem] = []
    hyperparams, r1 = validate_hyperparams(s.hyperparams, recipe, framework_version, validate=validate)
    problems += r1
    if validate:
        problems += _lifecycle(spec, recipe)
    problems += _observability(spec, recipe)
    problems += _image(spec, recipe)
    problems += _model_and_data(spec, recipe)
    if validate:
        problems += _role_names(spec, recipe)
    problems += _pools(spec, recipe)
    variant = recipe.runtime.versions.get(framework_version)
    if variant is not None and variant.deprecated:
        when = f"; it may be removed after {variant.sunset}" if variant.sunset else ""
        warnings.append(Problem("spec.framework.version", "runtime_deprecated",
                                f"{recipe.id} runtime {framework_version} is deprecated{when}"))
    return spec.with_hyperparams(hyperparams), problems, warnings


BENCHMARK_ACTION = "eval"  # the action a run of any recipe may take on benchmark suites


def runs_action(recipe: Recipe, spec: JobSpec, action: str, suites: tuple[str, ...] | None = None) -> bool:
    """Return True when `action` can follow a run of `recipe`: the recipe declares it, or it is `eval` on benchmark
    suites (`suites`, else the spec's `evaluation.suites`), which the console runs as an evalkit/benchmark job."""
    if action in recipe.lifecycle:
        return True
    return action == BENCHMARK_ACTION and bool(suites or spec.spec.evaluation.suites)


def _lifecycle(spec: JobSpec, recipe: Recipe) -> list[Problem]:
    declared = recipe.lifecycle
    unknown = [a for a in spec.spec.lifecycle.on_success if not runs_action(recipe, spec, a)]
    if not unknown:
        return []
    offered = ", ".join(declared) or "none"
    return [Problem("spec.lifecycle.on_success", "lifecycle_action_unknown",
                    f"{recipe.id} does not declare the lifecycle action{'s' if len(unknown) > 1 else ''} "
                    f"{', '.join(unknown)} (it declares: {offered})",
                    "remove it from on_success" + (f" or use one of {offered}" if declared else ""),
                    {"recipe": recipe.id, "unknown": unknown, "allowed": list(declared)})]


def _observability(spec: JobSpec, recipe: Recipe) -> list[Problem]:
    url = spec.spec.framework.observability_url
    field = "spec.framework.observability_url"
    if recipe.observability == "external" and not url:
        return [Problem(field, "observability_url_required",
                        f"{recipe.id} reports to an external tracker: observability_url is required",
                        "pass --observability-url https://… (your tracker's run or project page)", {"recipe": recipe.id})]
    if recipe.observability == "platform" and url:
        return [Problem(field, "observability_url_forbidden",
                        f"{recipe.id} uses platform observability: observability_url must be empty",
                        "drop the observability URL; metrics and logs are collected by the platform",
                        {"recipe": recipe.id})]
    if url and not _URL.fullmatch(url):
        return [Problem(field, "invalid_url", f"{url!r} is not an absolute http(s) URL without whitespace",
                        "write it as https://host/path")]
    return []


def _image(spec: JobSpec, recipe: Recipe) -> list[Problem]:
    image = spec.spec.framework.image
    if image:
        why = image_reference_error(image)
        if why:
            return [Problem("spec.framework.image.reference", "invalid_image_reference", f"{image!r}: {why}",
                            "use registry/name:tag or registry/name@sha256:<64 hex>, the repository name in lower "
                            "case")]
    elif recipe.framework == "custom":
        return [Problem("spec.framework.image", "image_required", f"{recipe.id} runs your own image: it is required",
                        "pass --image registry/name:tag", {"recipe": recipe.id})]
    return []


def _model_and_data(spec: JobSpec, recipe: Recipe) -> list[Problem]:
    if recipe.framework not in _NEEDS_MODEL_AND_TRAIN:
        return []
    s = spec.spec
    problems: list[Problem] = []
    if not s.model.base:
        problems.append(Problem("spec.model.base", "model_base_required",
                                f"{recipe.framework} recipes need the base model",
                                "pass --model <hf id, or a folder under the console's model_roots>"))
    train = s.data.train
    if train is None or not (train.dataset or train.path):
        problems.append(Problem("spec.data.train.path", "train_data_required",
                                f"{recipe.framework} recipes need training data (a dataset or a path)",
                                "pass --train-dataset OWNER/NAME@VERSION[:FILE] (`sf dataset push` uploads one)"))
    validation = s.data.validation
    if recipe.framework in _NEEDS_VALIDATION and (validation is None or not (validation.dataset or validation.path)):
        problems.append(Problem("spec.data.validation.path", "validation_data_required",
                                f"{recipe.framework} recipes need validation data (a dataset or a path)",
                                "pass --val-dataset OWNER/NAME@VERSION[:FILE] (`sf dataset push` uploads one)"))
    return problems


def _role_names(spec: JobSpec, recipe: Recipe) -> list[Problem]:
    declared = recipe.roles
    unknown = [r for r in spec.spec.resources.roles if r not in declared]
    if not unknown:
        return []
    return [Problem("spec.resources.roles", "role_unknown",
                    f"{recipe.id} does not declare the role{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                    f"(its roles: {', '.join(declared) or 'none'})",
                    "map only the recipe's roles, e.g. --profile " + (",".join(declared) or "<roles>") + "=h200:8",
                    {"recipe": recipe.id, "unknown": unknown, "allowed": list(declared)})]


def _pools(spec: JobSpec, recipe: Recipe) -> list[Problem]:
    resources = spec.spec.resources
    if len(resources.pools) <= 1:
        return []
    roles, declared = resources.roles, recipe.roles
    problems = [
        Problem(f"spec.resources.roles.{role}", "role_unmapped",
                f"with {len(resources.pools)} pools every role of {recipe.id} must be mapped; {role} is not",
                f"add {role} to a --profile prefix, e.g. --profile {role}=<profile>", {"recipe": recipe.id, "name": role})
        for role in declared if role not in roles
    ]
    if problems:
        return problems
    hosted = {roles[r] for r in declared if r in roles}
    problems = [
        Problem("spec.resources.pools", "pool_idle", f"pool {pool.name!r} hosts no role of {recipe.id}",
                "drop the pool or map a recipe role to it")
        for pool in resources.pools if pool.name not in hosted
    ]
    if problems:
        return problems
    return _adapter_topology(spec, recipe)


def _adapter_topology(spec: JobSpec, recipe: Recipe) -> list[Problem]:
    roles, declared = spec.spec.resources.roles, recipe.roles
    primary = roles[declared[0]] if declared else ""
    if recipe.adapter_options.get("launcher") in _SINGLE_WORLD_LAUNCHERS:
        return [Problem("spec.resources.pools", "pool_topology_unsupported",
                        f"{recipe.id} launches one {recipe.adapter_options['launcher']} world: all its roles "
                        "must share one pool", "use a single --profile without role prefixes")]
    if recipe.framework == "verl" and "teacher" in declared and roles.get("teacher") == primary:
        return [Problem("spec.resources.roles.teacher", "pool_topology_unsupported",
                        f"{recipe.id} needs the teacher on its own pool, not the primary pool {primary!r}",
                        "give the teacher its own --profile teacher=<profile>")]
    return []
