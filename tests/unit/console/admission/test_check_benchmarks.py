"""`check_benchmarks`: a benchmark job (evalkit/benchmark) runs only suites the console offers; where it names them."""

from __future__ import annotations

from starforge.console.services.admission.checks import check_benchmarks
from starforge.console.services.admission.checks.benchmarks import suites_asked
from starforge.console.services.admission.context import Resolutions
from starforge.contract import Problem

from .contexts import context, job

REFUSED = Problem("spec.hyperparams.suites", "suite_unknown", "no suite 'nope'", "offered: basic-arithmetic")


def _bench(**fields: object):  # type: ignore[no-untyped-def]
    return job(spec__recipe={"name": "evalkit/benchmark", "version": "1.0.0", "digest": "sha256:" + "0" * 64}, **fields)


def test_the_suites_are_named_by_the_hyperparameter_else_the_evaluation_section() -> None:
    assert suites_asked(_bench(spec__hyperparams={"suites": "b, a,b"})) == ("spec.hyperparams.suites", ["b", "a"])
    assert suites_asked(_bench(spec__evaluation={"suites": ["x"]})) == ("spec.evaluation.suites", ["x"])


def test_a_benchmark_job_reports_what_the_resolver_refused() -> None:
    ctx = context(_bench(spec__hyperparams={"suites": "nope"}), recipe=None,
                  resolutions=Resolutions(benchmark_problems=(REFUSED,)))
    assert check_benchmarks(ctx) == [REFUSED]
    assert check_benchmarks(context(_bench(spec__hyperparams={"suites": "a"}), recipe=None)) == []


def test_another_recipe_is_not_a_benchmark_job() -> None:
    assert check_benchmarks(context(resolutions=Resolutions(benchmark_problems=(REFUSED,)))) == []
