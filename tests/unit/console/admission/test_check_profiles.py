"""`check_profiles`: the job's profile is registered and allowed for the account; every pool's series is known."""

from __future__ import annotations

import pytest

from starforge.console.services.admission.checks import check_profiles
from starforge.console.services.quota.caps import QuotaView

from .contexts import context, job, triples

LIMITED = QuotaView(max_concurrent_gpus=8, max_concurrent_jobs=8, daily_gpu_hours=0.0, max_storage_gb=0.0,
                    allowed_profiles=("cpu", "a100"))


def _pools(*series: str | None) -> dict[str, object]:
    pools = [{"name": f"p{i}", "nodes": 1, "gpus_per_node": 1, **({"series": s} if s else {})}
             for i, s in enumerate(series)]
    return {"pools": pools}


@pytest.mark.parametrize("profile", ["cpu", "cpu:1", " cpu ", "a100:8"])
def test_a_registered_and_allowed_profile_passes(profile: str) -> None:
    assert check_profiles(context(profile=profile, quota=LIMITED)) == []


def test_every_registered_profile_passes_when_the_account_has_no_list() -> None:
    assert [check_profiles(context(profile=p)) for p in ("cpu", "h200:8", "a100")] == [[], [], []]


def test_an_unknown_profile_is_refused_listing_the_registered_ones_and_offering_the_usable_ones() -> None:
    [problem] = check_profiles(context(profile="b300:8"))
    assert triples([problem]) == [("X-Forge-Meta.profile", "profile_unknown", "registered profiles: a100, cpu, h200")]
    assert problem.message == "profile 'b300' is not registered"
    assert problem.data == {"got": "b300", "allowed": ["a100", "cpu", "h200"]}


def test_a_profile_the_account_may_not_use_is_refused() -> None:
    [problem] = check_profiles(context(profile="h200:8", quota=LIMITED))
    assert triples([problem]) == [("X-Forge-Meta.profile", "profile_not_allowed", "allowed for you: cpu, a100")]
    assert problem.message == "your account may not use profile 'h200'"
    assert problem.data == {"got": "h200", "allowed": ["cpu", "a100"]}


def test_an_unknown_profile_outside_the_account_s_list_gets_both_problems() -> None:
    problems = check_profiles(context(profile="b300", quota=LIMITED))
    assert [p.code for p in problems] == ["profile_unknown", "profile_not_allowed"]
    assert problems[0].data == {"got": "b300", "allowed": ["a100", "cpu"]}  # only the ones this account may use


def test_a_pool_of_an_unknown_series_is_refused_at_its_index() -> None:
    problems = check_profiles(context(job(spec__resources=_pools("cpu", "b300", None)), profile="mi300"))
    assert triples(problems) == [
        ("X-Forge-Meta.profile", "profile_unknown", "registered profiles: a100, cpu, h200"),
        ("spec.resources.pools[1].series", "series_unknown", "known series: a100, cpu, h200"),
        ("spec.resources.pools[2].series", "series_unknown", "known series: a100, cpu, h200"),  # the profile's series
    ]
    assert problems[1].message == "series 'b300' is not in this console's profile registry"
    assert problems[2].data == {"got": "mi300", "allowed": ["a100", "cpu", "h200"]}


def test_a_pool_without_a_series_takes_the_profile_s() -> None:
    assert check_profiles(context(job(spec__resources=_pools(None)), profile="h200:8")) == []
