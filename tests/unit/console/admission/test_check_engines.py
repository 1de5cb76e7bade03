"""`check_engines`: a job is started by one engine, so its pools' series must all run on the same one."""

from __future__ import annotations

from starforge.console.services.admission.checks import check_engines

from .contexts import context, job, triples

HINT = ("use pools of series served by one engine (`sf console` operators map series to engines in "
        "`executors.series`), or submit one job per engine")


def _pools(*series: str | None) -> dict[str, object]:
    return {"pools": [{"name": f"p{i}", "nodes": 1, "gpus_per_node": 1, **({"series": s} if s else {})}
                      for i, s in enumerate(series)]}


def test_series_of_the_default_engine_pass() -> None:
    assert check_engines(context(job(spec__resources=_pools("cpu", "h200")))) == []


def test_series_mapped_to_the_same_engine_pass() -> None:
    ctx = context(job(spec__resources=_pools("h200", "a100")),
                  settings__engine_series={"h200": "slurm", "a100": "slurm"})
    assert check_engines(ctx) == []


def test_pools_on_two_engines_are_refused_naming_each_engine_s_series() -> None:
    ctx = context(job(spec__resources=_pools("cpu", "h200", "a100")),
                  settings__engine_series={"h200": "slurm", "a100": "ray"})
    [problem] = check_engines(ctx)
    assert triples([problem]) == [("spec.resources.pools", "engines_span", HINT)]
    assert problem.message == ("the job's pools run on different engines of this deployment "
                               "(cpu on local; a100 on ray; h200 on slurm)")
    assert problem.data == {"got": ["local", "ray", "slurm"]}


def test_a_pool_without_a_series_runs_on_the_engine_of_the_profile_s_series() -> None:
    ctx = context(job(spec__resources=_pools(None, "cpu")), profile="h200:8", settings__engine_series={"h200": "slurm"})
    [problem] = check_engines(ctx)
    assert problem.message == ("the job's pools run on different engines of this deployment "
                               "(cpu on local; h200 on slurm)")
    assert check_engines(context(job(spec__resources=_pools(None)), profile="h200:8",
                                 settings__engine_series={"h200": "slurm"})) == []
