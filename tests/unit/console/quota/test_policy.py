"""The quota policy, cap by cap and effect by effect: what each cap refuses, holds in the queue or limits, with the
answers its callers (admission, the submission writer, `capacity.decide`, the scheduler) show to the user."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from starforge.console.services.quota import policy
from starforge.console.services.quota.capacity import Demand, Fit, Snapshot, decide, held_by
from starforge.console.services.quota.caps import QuotaView
from starforge.console.services.quota.policy import Ledger, Wait
from starforge.wire.quota_fields import QUOTA_FIELDS, Effect

OPEN = QuotaView(max_concurrent_gpus=0, max_concurrent_jobs=0, daily_gpu_hours=0.0, max_storage_gb=0.0)


def _quota(**caps: Any) -> QuotaView:
    return replace(OPEN, **caps)


# ---- refuse: (cap, the quota, the request, the code refusing it or None) --------------------------------------------

REFUSALS = [
    ("max_concurrent_gpus", _quota(max_concurrent_gpus=8), {"gpus": 16}, "quota_exceeded"),
    ("max_concurrent_gpus", _quota(max_concurrent_gpus=8), {"gpus": 8}, None),
    ("max_concurrent_gpus", _quota(max_concurrent_gpus=0), {"gpus": 10_000}, None),  # 0: unlimited
    ("daily_gpu_hours", _quota(daily_gpu_hours=10.0), {"gpus": 2, "hours": 4.0, "ledger": Ledger(10.0, 8.0)},
     "quota_exhausted"),
    ("daily_gpu_hours", _quota(daily_gpu_hours=10.0), {"gpus": 2, "hours": 2.0, "ledger": Ledger(10.0, 8.0)},
     None),  # an exact fit is admitted
    ("daily_gpu_hours", _quota(daily_gpu_hours=10.0), {"gpus": 2, "hours": 4.0, "ledger": Ledger(10.0, 2.0, 6.0)},
     "quota_exhausted"),  # what unfinished jobs reserve counts as used
    ("daily_gpu_hours", _quota(), {"gpus": 2, "hours": 4.0, "ledger": None}, None),  # no budget, no ledger
    ("allowed_profiles", _quota(allowed_profiles=("cpu",)), {"profile": "h200"}, "profile_not_allowed"),
    ("allowed_profiles", _quota(allowed_profiles=("cpu",)), {"profile": "cpu"}, None),
    ("allowed_profiles", _quota(), {"profile": "h200"}, None),  # empty: every profile
]


def _refusal(cap: str, quota: QuotaView, ask: dict[str, Any]) -> Any:
    if cap == "max_concurrent_gpus":
        return policy.gpus_refusal(quota, gpus=ask["gpus"], shape="2×8")
    if cap == "daily_gpu_hours":
        return policy.budget_refusal(ask["ledger"], hours=ask["hours"], gpus=ask["gpus"])
    return policy.profile_refusal(quota, ask["profile"])


@pytest.mark.parametrize(("cap", "quota", "ask", "code"), REFUSALS,
                         ids=[f"{c[0]}-{c[3] or 'admitted'}-{i}" for i, c in enumerate(REFUSALS)])
def test_each_refusing_cap_refuses_what_it_never_admits(cap: str, quota: QuotaView, ask: dict[str, Any],
                                                        code: str | None) -> None:
    assert Effect.REFUSE in next(f for f in QUOTA_FIELDS if f.name == cap).effects
    found = _refusal(cap, quota, ask)
    assert (found.code if found else None) == code


def test_a_gpu_refusal_names_the_numbers_and_the_cap() -> None:
    found = policy.gpus_refusal(_quota(max_concurrent_gpus=8), gpus=16, shape="2×8")
    assert found is not None and found.field == "spec.resources.pools"
    assert found.message == "the job asks for 16 GPUs (2×8) but your quota allows 8 at once"
    assert "max_concurrent_gpus" in found.hint and found.data == {"requested": 16, "limit": 8}


def test_a_budget_refusal_tells_what_is_left() -> None:
    found = policy.budget_refusal(Ledger(10.0, used=6.0, reserved=2.0), hours=4.0, gpus=2)
    assert found is not None and (found.field, found.code) == ("quota", "quota_exhausted")
    assert found.message == ("this job reserves 4 GPU hours (2 GPUs × its 2 h wall-time limit) but only 2 of your "
                             "daily budget of 10 GPU hours are left: 6 used today and 2 reserved by your queued and "
                             "running jobs")
    assert found.data == {"used": 6.0, "limit": 10.0, "reserved": 2.0, "needed": 4.0}


def test_a_follow_up_is_never_refused_by_the_budget() -> None:
    ledger = Ledger(10.0, used=10.0)
    assert policy.budget_refusal(ledger, hours=4.0, gpus=2) is not None
    assert policy.budget_refusal(ledger, hours=4.0, gpus=2, followup=True) is None
    assert {"quota_exhausted"} == policy.FOLLOWUP_EXEMPT_CODES


def test_admission_refuses_on_every_cap_at_once_in_table_order() -> None:
    quota = _quota(max_concurrent_gpus=8, daily_gpu_hours=10.0)
    found = policy.refusals(quota, Ledger(10.0, used=10.0), gpus=16, hours=1.0, shape="2×8")
    assert [p.code for p in found] == ["quota_exceeded", "quota_exhausted"]
    assert policy.refusals(quota, Ledger(10.0), gpus=8, hours=10.0) == []


def test_the_caps_that_do_not_refuse_never_do() -> None:
    tight = _quota(max_concurrent_jobs=1, max_job_hours=0.01, priority=-5, max_storage_gb=0.001)
    assert policy.refusals(tight, None, gpus=64, hours=0.0) == []
    assert policy.profile_refusal(tight, "h200") is None


def test_usable_profiles_are_the_registered_ones_the_account_may_use() -> None:
    names = {"h200", "cpu", "a100"}
    assert policy.usable_profiles(_quota(allowed_profiles=("cpu", "a100", "gone")), names) == ["a100", "cpu"]
    assert policy.usable_profiles(_quota(), names) == ["a100", "cpu", "h200"]


# ---- wait: (cap, the wait, the fit it is decided as) -----------------------------------------------------------------

WAITS = [
    ("max_concurrent_gpus", policy.gpus_wait(gpus=4, active_gpus=6, cap=8), Fit.QUOTA_GPUS,
     "quota: your active jobs use 6 of 8 GPUs and this job needs 4; it starts when they finish"),
    ("max_concurrent_jobs", policy.jobs_wait(active_jobs=2, cap=2), Fit.QUOTA_JOBS,
     "quota: 2 of 2 concurrent jobs are active; it starts when one ends"),
    ("daily_gpu_hours", policy.budget_wait(Ledger(10.0, used=9.0), hours=2.0, gpus=1), Fit.QUOTA_HOURS,
     "quota: this job reserves 2 GPU hours (1 GPU × its 2 h wall-time limit) but only 1 of your daily budget of 10 "
     "GPU hours are left: 9 used today and 0 reserved by your placed and running jobs; it starts when the budget "
     "renews at 00:00 UTC or once a running job ends early"),
]


@pytest.mark.parametrize(("cap", "wait", "fit", "reason"), WAITS, ids=[w[0] for w in WAITS])
def test_each_waiting_cap_holds_the_job_with_its_reason(cap: str, wait: Wait | None, fit: Fit, reason: str) -> None:
    assert Effect.WAIT in next(f for f in QUOTA_FIELDS if f.name == cap).effects
    assert wait == Wait(cap, reason)
    assert held_by(wait) == (fit, reason)
    assert fit.status == "queued" and fit.waiting_for == ("budget" if cap == "daily_gpu_hours" else "quota")


@pytest.mark.parametrize(("wait", "why"), [
    (policy.gpus_wait(gpus=2, active_gpus=6, cap=8), "fits exactly"),
    (policy.gpus_wait(gpus=64, active_gpus=64, cap=0), "0: unlimited"),
    (policy.jobs_wait(active_jobs=1, cap=2), "one more fits"),
    (policy.jobs_wait(active_jobs=99, cap=0), "0: unlimited"),
    (policy.budget_wait(Ledger(10.0, used=8.0), hours=2.0, gpus=1), "fits exactly"),
    (policy.budget_wait(Ledger(10.0, used=10.0), hours=2.0, gpus=1, followup=True), "a follow-up is exempt"),
    (policy.budget_wait(None, hours=2.0, gpus=1), "no budget"),
])
def test_a_cap_with_room_holds_nothing(wait: Wait | None, why: str) -> None:
    assert wait is None, why


def _decide(quota_gpus: int, quota_jobs: int, *, active_gpus: int, active_jobs: int, gpus: int) -> tuple[Fit, str]:
    snap = Snapshot(capacity={"h200": 64}, user_gpus={7: active_gpus}, user_jobs={7: active_jobs})
    return decide(snap, Demand("job", 7, gpus, {"h200": gpus}, 0, quota_gpus, quota_jobs))


def test_decide_holds_on_gpus_before_jobs_and_starts_a_job_with_room() -> None:
    assert _decide(8, 2, active_gpus=6, active_jobs=2, gpus=4) == (Fit.QUOTA_GPUS, WAITS[0][3])
    assert _decide(8, 2, active_gpus=2, active_jobs=2, gpus=4) == (Fit.QUOTA_JOBS, WAITS[1][3])
    assert _decide(8, 2, active_gpus=2, active_jobs=1, gpus=4) == (Fit.FITS, "")
    assert _decide(0, 0, active_gpus=60, active_jobs=60, gpus=4) == (Fit.FITS, "")


# ---- limit: (the quota, the job's GPUs, its profile's max_hours, the wall-time limit in hours) -----------------------

LIMITS = [
    ("max_job_hours", _quota(max_job_hours=2.0), 4, 0.0, 2.0),
    ("max_job_hours", _quota(max_job_hours=2.0), 4, 1.0, 1.0),  # the profile's own limit is shorter
    ("daily_gpu_hours", _quota(daily_gpu_hours=8.0), 4, 0.0, 2.0),  # the whole budget over the job's GPUs
    ("daily_gpu_hours", _quota(daily_gpu_hours=8.0, max_job_hours=1.5), 4, 0.0, 1.5),
    ("daily_gpu_hours", _quota(daily_gpu_hours=8.0), 0, 0.0, 8.0),  # a CPU job counts as one GPU
    (None, _quota(), 4, 0.0, 0.0),  # no cap, no profile limit: none
    (None, _quota(), 4, 3.0, 3.0),
]


@pytest.mark.parametrize(("cap", "quota", "gpus", "profile_hours", "hours"), LIMITS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LIMITS)])
def test_each_limiting_cap_bounds_the_wall_time(cap: str | None, quota: QuotaView, gpus: int, profile_hours: float,
                                                hours: float) -> None:
    if cap is not None:
        assert Effect.LIMIT in next(f for f in QUOTA_FIELDS if f.name == cap).effects
    assert policy.wall_hours(gpus=gpus, profile_hours=profile_hours, quota=quota) == hours
    seconds = policy.wall_seconds(gpus=gpus, profile="h200", quota=quota, profile_max_hours={"h200": profile_hours})
    assert seconds == (hours * 3600 if hours else None)


def test_a_job_reserves_its_gpus_times_its_limit_of_a_budget_only() -> None:
    hours = {"h200": 1.0}
    assert policy.reserved_hours(gpus=4, profile="h200", quota=_quota(daily_gpu_hours=8.0), profile_max_hours=hours) \
        == 4.0
    assert policy.reserved_hours(gpus=4, profile="cpu", quota=_quota(daily_gpu_hours=8.0), profile_max_hours=hours) \
        == 8.0  # no profile limit: the whole budget over its GPUs
    assert policy.reserved_hours(gpus=4, profile="h200", quota=_quota(max_job_hours=2.0), profile_max_hours=hours) \
        == 0.0  # no budget: nothing is reserved


@pytest.mark.parametrize("expression", ["h200", "h200:4", "actor,rollout=h200:4", " h200 : 4 "])
def test_a_profile_expression_is_limited_by_the_profile_it_names(expression: str) -> None:
    """A client sending `h200:4` (the official one's form) gets h200's max_hours, as one sending `h200` does."""
    hours, quota = {"h200": 1.0}, _quota(daily_gpu_hours=8.0)
    assert policy.reserved_hours(gpus=4, profile=expression, quota=quota, profile_max_hours=hours) == 4.0
    assert policy.wall_seconds(gpus=4, profile=expression, quota=quota, profile_max_hours=hours) == 3600.0


# ---- order --------------------------------------------------------------------------------------------------------

def test_priority_orders_the_queue_and_limits_nothing() -> None:
    quota = _quota(priority=-3)
    assert policy.queue_priority(quota) == -3
    assert policy.wall_hours(gpus=1, profile_hours=0.0, quota=quota) == 0.0
    assert policy.refusals(quota, None, gpus=1, hours=0.0) == []


# ---- the table and the policy agree ------------------------------------------------------------------------------

@pytest.mark.parametrize("cap", QUOTA_FIELDS, ids=lambda cap: cap.name)
def test_every_effect_of_the_table_has_its_rule(cap: Any) -> None:
    enforced = set(cap.effects) - {Effect.REPORT}
    assert set(policy.RULES[cap.name]) == enforced, f"{cap.name}: the table says {cap.effects}"
    if Effect.REFUSE in cap.effects:
        assert cap.codes, f"{cap.name} refuses with no problem code"
    if Effect.WAIT in cap.effects:
        held = Wait(cap.name, "why")
        assert held_by(held)[0].status == "queued", f"{cap.name} holds jobs but `capacity.QUOTA_FITS` has no verdict"


def test_the_policy_names_no_cap_outside_the_table() -> None:
    assert set(policy.RULES) == {cap.name for cap in QUOTA_FIELDS}
    assert set(policy.FOLLOWUP_EXEMPT) <= set(policy.RULES)
