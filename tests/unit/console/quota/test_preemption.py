"""Preemption, pure: the victims a job waiting for capacity may take — the fewest lost GPU-seconds, never more than
needed, none when it would still not fit, the capacity already being freed counted first, a victim chosen once —
under the priority rule and the fair-share rule."""

from __future__ import annotations

from typing import Any

import pytest

from starforge.console.services.quota.capacity import Demand, Snapshot
from starforge.console.services.quota.fairshare import ShareBook
from starforge.console.services.quota.preemption import Claim, Preemptor, Running, lost_seconds, why

NOW = 10_000.0
ALICE, BOB, CAROL = 1, 2, 3


def _running(job_id: str, user: int = BOB, gpus: int = 4, *, priority: int = 0, started: float = NOW - 1000,
             checkpoint: float | None = None, series: dict[str, int] | None = None,
             interrupting: bool = False) -> Running:
    return Running(job_id, user, priority, gpus, series or {"h200": gpus}, started, checkpoint, interrupting)


def _demand(job_id: str = "w", user: int = ALICE, gpus: int = 4, *, priority: int = 1,
            series: dict[str, int] | None = None) -> Demand:
    return Demand(job_id, user, gpus, series or {"h200": gpus}, priority, 0, 0)


def _snap(running: list[Running], capacity: dict[str, int] | None = None) -> Snapshot:
    snap = Snapshot(capacity=capacity or {"h200": 16})
    for job in running:
        for series, count in job.series_gpus.items():
            snap.used[series] += count
    return snap


def _preemptor(running: list[Running], *, policy: str = "priority", **snap: Any) -> Preemptor:
    return Preemptor(_snap(running, **snap), running, policy=policy, now=NOW)


def _ids(claim: Claim | None) -> list[str] | None:
    return None if claim is None else sorted(job.job_id for job in claim.victims)


def test_lost_work_runs_from_the_later_of_the_attempts_start_and_its_last_checkpoint() -> None:
    assert lost_seconds(_running("a", started=NOW - 600), NOW) == 600
    assert lost_seconds(_running("a", started=NOW - 600, checkpoint=NOW - 60), NOW) == 60
    assert lost_seconds(_running("a", started=NOW - 600, checkpoint=NOW - 6000), NOW) == 600  # an earlier attempt's


def test_the_victim_is_the_one_that_loses_the_fewest_gpu_seconds() -> None:
    running = [_running("old", started=NOW - 3000), _running("saved", started=NOW - 3000, checkpoint=NOW - 30),
               _running("young", started=NOW - 100), _running("other", started=NOW - 2000)]
    assert _ids(_preemptor(running).consider(_demand(), None)) == ["saved"]


def test_loss_counts_gpus_times_time() -> None:
    running = [_running("big", gpus=8, started=NOW - 100), _running("small", gpus=4, started=NOW - 150),
               _running("rest", gpus=4, started=NOW - 5000)]
    assert _ids(_preemptor(running).consider(_demand(), None)) == ["small"]  # 600 GPU-s < 800


def test_never_more_victims_than_needed() -> None:
    # 8 needed: greedy by loss takes two cheap 4-GPU jobs; no 8-GPU one on top
    running = [_running("a", started=NOW - 10), _running("b", started=NOW - 20),
               _running("big", gpus=8, started=NOW - 30)]
    assert _ids(_preemptor(running).consider(_demand(gpus=8), None)) == ["a", "b"]
    # a cheap small one first, then a big one that alone covers the need: the small one is dropped
    running = [_running("tiny", gpus=2, started=NOW - 10), _running("big", gpus=8, started=NOW - 15),
               _running("rest", gpus=6, started=NOW - 9000)]
    assert _ids(_preemptor(running).consider(_demand(gpus=8), None)) == ["big"]


def test_free_slots_count_before_victims() -> None:
    running = [_running("a", started=NOW - 10), _running("b", started=NOW - 20), _running("c", started=NOW - 30)]
    preemptor = _preemptor(running)  # 12 of 16 busy: 4 free
    assert preemptor.consider(_demand(gpus=4), None) is None  # it fits the free slots: nothing to preempt
    assert _ids(preemptor.consider(_demand("w2", gpus=6), None)) == ["a"]  # 4 free (not counted yet) + 4


def test_no_victim_when_the_job_would_still_not_fit() -> None:
    running = [_running("low", priority=0), _running("high", priority=5, gpus=12)]
    preemptor = _preemptor(running)
    assert preemptor.consider(_demand(gpus=8, priority=1), None) is None  # only 4 of a lower priority
    assert _ids(preemptor.consider(_demand("w2", gpus=4, priority=1), None)) == ["low"]  # nothing was taken before


def test_the_priority_rule_takes_only_lower_priorities() -> None:
    running = [_running("equal", priority=1, started=NOW - 1), _running("lower", priority=0, started=NOW - 5000),
               _running("higher", priority=2, started=NOW - 1), _running("fill", priority=2, gpus=4)]
    assert _ids(_preemptor(running).consider(_demand(priority=1), None)) == ["lower"]
    assert _preemptor(running).consider(_demand(priority=0), None) is None


def test_a_victim_is_chosen_once_and_what_it_frees_beyond_the_need_is_left_for_the_next_jobs() -> None:
    running = [_running("a", gpus=8, started=NOW - 10), _running("b", gpus=8, started=NOW - 20)]
    preemptor = _preemptor(running)
    first = preemptor.consider(_demand("w1", gpus=2), None)
    assert _ids(first) == ["a"]
    second = preemptor.consider(_demand("w2", gpus=6), None)  # the 6 slots `a` frees beyond w1's 2
    assert second == Claim((), (running[0],))
    assert _ids(preemptor.consider(_demand("w3", gpus=8), None)) == ["b"]
    assert preemptor.consider(_demand("w4", gpus=1), None) is None  # every job is taken


def test_capacity_already_being_freed_counts_first_and_in_queue_order() -> None:
    running = [_running("stopping", interrupting=True, started=NOW - 10), _running("a", started=NOW - 20),
               _running("b", started=NOW - 30), _running("c", started=NOW - 40)]
    preemptor = _preemptor(running)
    claim = preemptor.consider(_demand("w1", gpus=4), None)
    assert claim == Claim((), (running[0],)) and claim.waits_for == 1  # no new victim while enough is freed
    assert _ids(preemptor.consider(_demand("w2", gpus=4), None)) == ["a"]  # the next job needs its own


def test_a_job_already_interrupting_is_never_chosen_again() -> None:
    running = [_running("stopping", interrupting=True, started=NOW - 1, gpus=12), _running("a", started=NOW - 50)]
    preemptor = _preemptor(running)
    assert preemptor.consider(_demand("w1", gpus=12), None) == Claim((), (running[0],))
    assert _ids(preemptor.consider(_demand("w2", gpus=4), None)) == ["a"]


def test_a_job_on_several_series_takes_victims_on_each() -> None:
    capacity = {"h200": 8, "b200": 8}
    running = [_running("h", gpus=8, started=NOW - 10), _running("b", gpus=8, series={"b200": 8}, started=NOW - 10)]
    claim = _preemptor(running, capacity=capacity).consider(_demand(gpus=8, series={"h200": 4, "b200": 4}), None)
    assert _ids(claim) == ["b", "h"]
    mixed = [_running("mix", gpus=8, series={"h200": 4, "b200": 4}, started=NOW - 10),
             _running("h", gpus=4, started=NOW - 20), _running("b", gpus=4, series={"b200": 4}, started=NOW - 20)]
    claim = _preemptor(mixed, capacity=capacity).consider(_demand(gpus=8, series={"h200": 4, "b200": 4}), None)
    assert _ids(claim) == ["mix"]  # one victim frees both series


def _book(allocation: dict[int, int], demand: set[int] | None = None) -> ShareBook:
    return ShareBook(weights={}, default_weight=1.0, usage={}, capacity={"h200": 16},
                     allocation={(user, "h200"): gpus for user, gpus in allocation.items()},
                     demand={"h200": demand or set(allocation)})


def test_the_fair_share_rule_takes_from_an_account_beyond_its_share_for_one_within_it() -> None:
    # bob holds all 16 slots, alice (waiting) and bob divide them: 8 each; the same priority
    running = [_running(f"b{i}", gpus=4, priority=0, started=NOW - 100 * (i + 1)) for i in range(4)]
    book = _book({BOB: 16}, demand={ALICE, BOB})
    preemptor = _preemptor(running, policy="fair-share")
    claim = preemptor.consider(_demand("w1", gpus=4, priority=0), book)
    assert _ids(claim) == ["b0"]
    assert claim is not None and why(_demand(priority=0), claim.victims[0]) == (
        "its account is within its share; this one borrows")
    assert _ids(preemptor.consider(_demand("w2", gpus=4, priority=0), book)) == ["b1"]  # alice at 8: her share
    assert preemptor.consider(_demand("w3", gpus=4, priority=0), book) is None  # beyond it: no more


def test_the_fair_share_rule_never_pushes_the_victims_account_below_its_share() -> None:
    # bob holds 12 (share 8): 4 may go, not the 8-GPU job
    running = [_running("b8", gpus=8, priority=0, started=NOW - 10), _running("b4", gpus=4, priority=0,
                                                                             started=NOW - 500),
               _running("c", user=CAROL, gpus=4, priority=0, started=NOW - 10)]
    book = _book({BOB: 12, CAROL: 4}, demand={ALICE, BOB, CAROL})  # shares: 16/3 each
    claim = _preemptor(running, policy="fair-share").consider(_demand(gpus=4, priority=0), book)
    assert _ids(claim) == ["b4"]


def test_the_fair_share_rule_does_not_apply_to_an_account_beyond_its_own_share() -> None:
    running = [_running("b", gpus=12, priority=0), _running("a", user=ALICE, gpus=4, priority=0)]
    book = _book({BOB: 12, ALICE: 4})
    preemptor = _preemptor(running, policy="fair-share")
    assert preemptor.consider(_demand(gpus=8, priority=0), book) is None  # 4 + 8 > alice's 8
    assert _preemptor(running, policy="priority").consider(_demand(gpus=4, priority=0), book) is None


def test_the_fair_share_policy_keeps_the_priority_rule() -> None:
    running = [_running("low", user=CAROL, gpus=4, priority=0), _running("b", gpus=12, priority=2)]
    book = _book({BOB: 12, CAROL: 4, ALICE: 0}, demand={ALICE, BOB, CAROL})
    claim = _preemptor(running, policy="fair-share").consider(_demand(gpus=12, priority=1), book)
    assert claim is None  # alice would hold 12 > her share: the share rule does not apply, and 4 is not enough
    claim = _preemptor(running, policy="fair-share").consider(_demand(gpus=4, priority=1), book)
    assert _ids(claim) == ["low"]
    assert why(_demand(priority=1), running[0]) == "priority 1 > 0"


def test_an_unknown_policy_is_a_bug() -> None:
    with pytest.raises(ValueError, match="unknown preemption policy"):
        Preemptor(Snapshot(capacity={}), [], policy="off", now=NOW)
