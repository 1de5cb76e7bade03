"""`check_placeable`: a job no capacity of this deployment can ever serve is refused at its pool's series, unless
its submitter lets it wait (`allow_pending`) or the console queues such jobs (`admission.unplaceable: queue`)."""

from __future__ import annotations

import pytest

from starforge.console.services.admission.checks import check_placeable

from .contexts import context, job, triples


def _pools(*pools: tuple[str | None, int, int]) -> dict[str, object]:
    return {"pools": [{"name": f"p{i}", "nodes": nodes, "gpus_per_node": gpus, **({"series": s} if s else {})}
                      for i, (s, nodes, gpus) in enumerate(pools)]}


def _hint(series: str, served: str = "cpu, h200") -> str:
    return (f"series with capacity here: {served}; or pass --allow-pending (`allow_pending: true`) to let it wait "
            f"until an operator adds {series} capacity")


@pytest.mark.parametrize("pools", [
    [("cpu", 1, 1)],
    [("cpu", 1, 4)],  # all the slots there are, though some may be busy: it waits, it is not refused
    [("h200", 2, 8), ("cpu", 1, 4)],
    [(None, 2, 8)],  # the profile's series
])
def test_a_job_the_deployment_can_serve_passes(pools: list[tuple[str | None, int, int]]) -> None:
    assert check_placeable(context(job(spec__resources=_pools(*pools)), profile="h200:8")) == []


def test_a_series_without_capacity_is_refused_at_its_pool() -> None:
    [problem] = check_placeable(context(job(spec__resources=_pools(("cpu", 1, 1), ("a100", 1, 8)))))
    assert triples([problem]) == [("spec.resources.pools[1].series", "series_no_capacity", _hint("a100"))]
    assert problem.message == "no a100 capacity in this deployment: the job could never start here"
    assert problem.data == {"got": "a100", "allowed": ["cpu", "h200"]}


def test_more_slots_than_the_deployment_has_are_refused() -> None:
    [problem] = check_placeable(context(job(spec__resources=_pools(("h200", 3, 8)))))
    assert triples([problem]) == [("spec.resources.pools[0].series", "series_no_capacity", _hint("h200"))]
    assert problem.message == "this job needs 24 h200 slots but the deployment has 16: the job could never start here"


def test_pools_of_one_series_are_counted_together_and_refused_once_at_the_first() -> None:
    problems = check_placeable(context(job(spec__resources=_pools(("cpu", 1, 1), ("h200", 1, 8), ("h200", 2, 8)))))
    assert [(p.field, p.message) for p in problems] == [
        ("spec.resources.pools[1].series",
         "this job needs 24 h200 slots but the deployment has 16: the job could never start here")]


def test_a_series_listed_with_no_slot_is_not_offered() -> None:
    ctx = context(job(spec__resources=_pools(("a100", 1, 8))), capacity={"cpu": 4, "h200": 0, "a100": 0})
    [problem] = check_placeable(ctx)
    assert problem.hint == _hint("a100", served="cpu") and problem.data == {"got": "a100", "allowed": ["cpu"]}
    [problem] = check_placeable(context(job(spec__resources=_pools(("a100", 1, 8))), capacity={}))
    assert problem.hint == _hint("a100", served="none") and problem.data == {"got": "a100", "allowed": []}


def test_a_series_outside_the_profile_registry_is_left_to_check_profiles() -> None:
    assert check_placeable(context(job(spec__resources=_pools(("b300", 1, 8))))) == []


def test_the_submitter_may_let_the_job_wait() -> None:
    assert check_placeable(context(job(spec__resources=_pools(("a100", 1, 8))), allow_pending=True)) == []


def test_a_console_that_queues_unplaceable_jobs_refuses_none() -> None:
    ctx = context(job(spec__resources=_pools(("a100", 1, 8), ("h200", 4, 8))), settings__unplaceable="queue")
    assert check_placeable(ctx) == []
