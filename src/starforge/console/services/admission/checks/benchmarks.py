"""Benchmark suites: a benchmark job (recipe `evalkit/benchmark`) runs only suites this console offers.

The suites are named by the job's `suites` hyperparameter (comma-separated, `spec.hyperparams.suites`) or, for an
evaluation follow-up, by `spec.evaluation.suites`; `admission.resolve` looks them up once with
`benchmark_packs.resolve_suites`, and this check reports what it refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from .....contract import JobSpec, Problem
from ..context import AdmissionContext

__all__ = ["BENCHMARK_RECIPE", "check_benchmarks", "is_benchmark_job", "suites_asked"]

BENCHMARK_RECIPE = "evalkit/benchmark"


def is_benchmark_job(spec: JobSpec) -> bool:
    """Return True when the job runs benchmark suites (recipe `evalkit/benchmark`)."""
    return spec.spec.recipe.name == BENCHMARK_RECIPE


def suites_asked(spec: JobSpec) -> tuple[str, Sequence[str]]:
    """Return the field a benchmark job names its suites at and the distinct names, in order."""
    text = spec.spec.hyperparams.get("suites")
    if isinstance(text, str) and text.strip():
        names = [n.strip() for n in text.split(",") if n.strip()]
        return "spec.hyperparams.suites", list(dict.fromkeys(names))
    return "spec.evaluation.suites", list(dict.fromkeys(spec.spec.evaluation.suites))


def check_benchmarks(ctx: AdmissionContext) -> list[Problem]:
    """Refuse a benchmark job naming a suite this console does not offer (the hint lists those offered)."""
    return list(ctx.resolutions.benchmark_problems) if is_benchmark_job(ctx.spec) else []
