"""`check_quota`: a job above the account's concurrent-GPU cap can never run, and one whose reserved GPU hours do not
fit what is left of the daily budget is refused (caps that only make a job wait are the commit step's)."""

from __future__ import annotations

from typing import Any

import pytest

from starforge.console.services.admission.checks import check_quota
from starforge.console.services.admission.context import AdmissionContext
from starforge.console.services.quota.caps import QuotaView
from starforge.console.services.quota.policy import Ledger

from .contexts import context, job


def _ctx(*pools: tuple[int, int], ledger: Ledger | None = None, profile: str = "h200", **caps: Any
         ) -> AdmissionContext:
    quota = QuotaView(**{"max_concurrent_gpus": 16, "max_concurrent_jobs": 8, "daily_gpu_hours": 0.0,
                         "max_storage_gb": 0.0, **caps})
    spec = job(spec__resources={"pools": [{"name": f"p{i}", "series": "h200", "nodes": n, "gpus_per_node": g}
                                          for i, (n, g) in enumerate(pools)]})
    return context(spec, profile=profile, quota=quota, ledger=ledger, settings__profile_max_hours={"h200": 0.5})


@pytest.mark.parametrize("ctx", [
    _ctx((2, 8)),  # exactly the cap
    _ctx((4, 8), max_concurrent_gpus=0),  # no cap
    _ctx((1, 8), daily_gpu_hours=4.0, ledger=None),  # a budget but no ledger (a follow-up)
    _ctx((1, 8), daily_gpu_hours=10.0, ledger=Ledger(10.0, used=3.0, reserved=3.0)),  # 8 × 0.5 h = 4 h: exactly left
    _ctx((1, 8), daily_gpu_hours=0.0, ledger=Ledger(0.0, used=99.0)),  # a ledger without a budget
], ids=["at-the-cap", "no-cap", "no-ledger", "exact-fit", "no-budget"])
def test_a_job_within_the_caps_passes(ctx: AdmissionContext) -> None:
    assert check_quota(ctx) == []


def test_more_gpus_than_the_concurrent_cap_are_refused_at_the_pools() -> None:
    [problem] = check_quota(_ctx((1, 8), (1, 2), max_concurrent_gpus=8))
    assert (problem.field, problem.code) == ("spec.resources.pools", "quota_exceeded")
    assert problem.message == "the job asks for 10 GPUs (1×8 + 1×2) but your quota allows 8 at once"
    assert "max_concurrent_gpus" in problem.hint and "--profile" in problem.hint
    assert problem.data == {"requested": 10, "limit": 8}


def test_a_job_reserving_more_hours_than_the_day_has_left_is_refused() -> None:
    [problem] = check_quota(_ctx((1, 8), daily_gpu_hours=10.0, ledger=Ledger(10.0, used=3.0, reserved=3.5)))
    assert (problem.field, problem.code) == ("quota", "quota_exhausted")
    assert problem.message == ("this job reserves 4 GPU hours (8 GPUs × its 0.5 h wall-time limit) but only 3.5 of "
                               "your daily budget of 10 GPU hours are left: 3 used today and 3.5 reserved by your "
                               "queued and running jobs")
    assert "daily_gpu_hours" in problem.hint and "00:00 UTC" in problem.hint
    assert problem.data == {"used": 3.0, "limit": 10.0, "reserved": 3.5, "needed": 4.0}


def test_the_shortest_wall_time_limit_sets_the_reservation() -> None:
    # the account's max_job_hours (0.25 h) under the profile's 0.5 h: 8 × 0.25 = 2 GPU hours, 2.5 left
    assert check_quota(_ctx((1, 8), daily_gpu_hours=10.0, max_job_hours=0.25, ledger=Ledger(10.0, used=7.5))) == []
    # a profile without max_hours: the budget over the job's GPUs (10 / 8 h), so the whole budget
    [problem] = check_quota(_ctx((1, 8), profile="a100", daily_gpu_hours=10.0, ledger=Ledger(10.0, used=0.5)))
    assert problem.data == {"used": 0.5, "limit": 10.0, "reserved": 0.0, "needed": 10.0}


def test_both_refusals_are_reported() -> None:
    ctx = _ctx((2, 8), max_concurrent_gpus=8, daily_gpu_hours=1.0, ledger=Ledger(1.0, used=1.0))
    assert [(p.field, p.code) for p in check_quota(ctx)] == [("spec.resources.pools", "quota_exceeded"),
                                                            ("quota", "quota_exhausted")]
