"""Evaluation follow-ups on benchmark suites: `eval` with suites (`spec.evaluation.suites`, `sf eval --benchmarks`,
`on_success: [eval]`) becomes a job of recipe `evalkit/benchmark` on the parent's latest checkpoint — the same job
`sf bench run` submits — instead of the parent recipe's own evaluation step.

Tier: query (runs over the caller's session; never begins or commits a transaction). The child keeps the parent's
names, experiment and profile; it runs no bundle (the benchmark recipe needs none of the parent's files), evaluates
the checkpoint `followups.add_followup` resolves as `init_from`, and its suites are resolved here with
`benchmark_packs.resolve_suites` and recorded as `resolved["benchmarks"]` for the mounts of their packs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy.orm import Session

from ....contract import Data, Evaluation, Framework, JobSpec, Lifecycle, Problem, RecipeRef
from ....recipes import BENCHMARK_ACTION
from ..admission.checks.benchmarks import BENCHMARK_RECIPE, is_benchmark_job, suites_asked
from ..errors import Rejected
from ..registries import benchmark_packs

__all__ = ["BENCHMARK_FIELD", "benchmark_spec", "benchmark_suites", "recorded_suites", "suite_problems"]

BENCHMARK_FIELD = "spec.evaluation.suites"


def benchmark_suites(spec: JobSpec, action: str, asked: Sequence[str] | None) -> tuple[str, ...]:
    """Return the suites an `action` follow-up of `spec` evaluates on (the asked ones, else the spec's
    `evaluation.suites`); empty when it is not a benchmark evaluation (then the recipe's own `eval` step runs).
    Which actions may follow a run is `recipes.runs_action`."""
    if action != BENCHMARK_ACTION:
        return ()
    return tuple(asked) if asked else tuple(spec.spec.evaluation.suites)


def benchmark_spec(parent: JobSpec, catalog: Any, suites: Sequence[str]) -> tuple[JobSpec, Any]:
    """Return the benchmark child's spec (the parent's with the served `evalkit/benchmark` recipe, its framework,
    the suites as its `suites` hyperparameter, no data, plugins or lifecycle) and that recipe (None when this
    console serves none: the follow-up checks then refuse the child)."""
    recipe = catalog.get(BENCHMARK_RECIPE)
    if recipe is None:
        return parent, None
    version = recipe.default_version
    scheme = getattr(catalog, "scheme", None)
    hyperparams: dict[str, Any] = {"suites": ",".join(suites)}
    if parent.spec.evaluation.limit:
        hyperparams["limit"] = parent.spec.evaluation.limit
    child = replace(parent.spec, recipe=RecipeRef(BENCHMARK_RECIPE, recipe.version, recipe.digest(scheme)),
                    framework=Framework("evalkit", version, recipe.runtime_id(version)), data=Data(), plugins=(),
                    hyperparams=hyperparams, lifecycle=Lifecycle(),
                    evaluation=Evaluation(suites=tuple(suites), limit=parent.spec.evaluation.limit))
    return replace(parent, spec=child), recipe


def suite_problems(db: Session, suites: Sequence[str]) -> list[Problem]:
    """Return why the suites cannot be run (unknown, or none named), at `spec.evaluation.suites`."""
    try:
        benchmark_packs.resolve_suites(db, list(suites), field=BENCHMARK_FIELD)
    except Rejected as exc:
        return list(exc.problems)
    return []


def recorded_suites(db: Session, child: JobSpec) -> list[dict[str, Any]] | None:
    """Return `resolved["benchmarks"]` of a benchmark child whose suites resolve (None for another child)."""
    if not is_benchmark_job(child):
        return None
    field, names = suites_asked(child)
    return benchmark_packs.record(benchmark_packs.resolve_suites(db, names, field=field))
