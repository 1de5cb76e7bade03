"""Which runtime a recipe needs on a series, and whether this console can run it there at all (pure rules).

A recipe variant can run on a series when (in this order):

1. it is `custom/custom`: the user manages the runtime (`train.sh`), always runnable;
2. its framework is not GPU-only (`runtimes.gpu_only`: nemo-rl, verl, openrlhf), or the series has GPUs (every
   series not listed in `runtimes.cpu_series`);
3. an entrypoint of kind `file` has the framework's checkout configured (`framework_dirs`);
4. it has requirements to build a runtime from (the variant's `requires` plus `runtimes.requires[<runtime_id>]`),
   or, without any, the console's own interpreter can import its module entrypoint.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import RuntimeSettings
from .environment import ConsoleEnvironment
from .spec import CPU, GPU

__all__ = ["Blocker", "blocker", "catalog_requirements", "job_kind", "series_kind", "variant_requirements"]

USER_MANAGED = "custom"


@dataclass(frozen=True)
class Blocker:
    """Why this console cannot start a recipe on a series, and what would let it."""

    reason: str
    hint: str


def series_kind(series: str, settings: RuntimeSettings) -> str:
    """Return `cpu` for a series listed in `runtimes.cpu_series`, else `gpu`."""
    return CPU if series in settings.cpu_series else GPU


def job_kind(series: Iterable[str], settings: RuntimeSettings) -> str:
    """Return `gpu` when any of a job's series has GPUs, else `cpu`."""
    return GPU if any(series_kind(s, settings) == GPU for s in series) else CPU


def variant_requirements(recipe: Any, version: str, settings: RuntimeSettings) -> tuple[str, ...]:
    """Return the runtime requirements of a recipe variant: its `requires`, then the deployment's additions."""
    variant = recipe.runtime.versions.get(version)
    if variant is None:
        return ()
    extra = settings.requires.get(variant.runtime_id, ()) if variant.runtime_id else ()
    return tuple(dict.fromkeys((*variant.requires, *extra)))


def catalog_requirements(catalog: Any, runtime_id: str,
                         settings: RuntimeSettings) -> tuple[list[tuple[str, ...]], list[str]]:
    """Return the distinct requirement sets of the recipe variants naming a runtime id — each exactly what a job of
    that variant builds (`variant_requirements`) — and the frameworks using it (the console's internal recipes, such
    as serving/*, count too: their runtimes are built ahead the same way)."""
    sets: list[tuple[str, ...]] = []
    frameworks: list[str] = []
    for recipe in (*catalog.recipes, *getattr(catalog, "internal", ())):
        for version, variant in recipe.runtime.versions.items():
            if variant.runtime_id == runtime_id:
                frameworks.append(recipe.framework)
                requirements = variant_requirements(recipe, version, settings)
                if requirements and requirements not in sets:
                    sets.append(requirements)
    return sets, list(dict.fromkeys(frameworks))


def blocker(recipe: Any, version: str, series: str, *, settings: RuntimeSettings,
            framework_dirs: Mapping[str, str], env: ConsoleEnvironment) -> Blocker | None:
    """Return why `recipe` at `version` cannot start on `series` here, or None when it can."""
    framework = recipe.framework
    if framework == USER_MANAGED:
        return None
    if framework in settings.gpu_only and series_kind(series, settings) == CPU:
        return Blocker(f"{framework} runs on GPUs only, and series {series!r} has none",
                       "choose a profile whose series has GPUs")
    entry = recipe.entrypoint_for(version)
    if entry.kind == "file":
        checkout = framework_dirs.get(framework, "")
        if not checkout or not Path(checkout).is_dir():
            where = f" ({checkout} is not a folder)" if checkout else ""
            return Blocker(f"recipe {recipe.id} runs {entry.value} from a {framework} checkout, and this console "
                           f"has none{where}",
                           f"an operator sets framework_dirs: {{{framework}: /path/to/checkout}} in the console "
                           "configuration")
    variant = recipe.runtime.versions.get(version)
    if variant is not None and not variant_requirements(recipe, version, settings) and entry.kind == "module" \
            and not env.importable(entry.value):
        runtime = variant.runtime_id or f"{framework}-{version}"
        return Blocker(f"recipe {recipe.id} declares no runtime requirements, and {entry.value.split('.')[0]} is "
                       "not installed where the console runs, so no runtime can be built for it",
                       f"an operator lists what {runtime} needs under runtimes.requires.{runtime} in the console "
                       "configuration")
    return None
