"""`capacity.place`, the one placement step of the submission writer and the scheduler: decide on the snapshot,
then book the verdict — a job that fits is assumed, one that waits for capacity blocks its priority and lower (every
later job, on a positional snapshot), and every other verdict books nothing; `demand_of`, the one way a job row
becomes a demand; and `decide_queue`, the scheduler's pass over the waiting jobs (order, place, preempt)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import pytest

from starforge.console.services.quota.capacity import Demand, Fit, Snapshot, demand_of, place
from starforge.console.services.quota.fairshare import ShareBook
from starforge.console.services.quota.placement import decide_queue, waits_for_preempted
from starforge.console.services.quota.preemption import Preemptor, Running
from starforge.console.store.models import Job


def _demand(job_id: str, user: int = 1, gpus: int = 8, *, series: str = "h200", priority: int = 0,
            max_gpus: int = 0, max_jobs: int = 0, sweep: str = "", sweep_max: int = 0) -> Demand:
    return Demand(job_id, user, gpus, {series: gpus}, priority, max_gpus, max_jobs, sweep, sweep_max)


def test_a_job_that_fits_is_assumed_so_the_next_decision_counts_it() -> None:
    snap = Snapshot(capacity={"h200": 16})
    assert place(snap, _demand("a", sweep="s")) == (Fit.FITS, "")
    assert (snap.used["h200"], snap.user_gpus[1], snap.user_jobs[1], snap.sweep_jobs[(1, "s")]) == (8, 8, 1, 1)
    assert place(snap, _demand("b"))[0] is Fit.FITS
    fit, reason = place(snap, _demand("c"))
    assert fit is Fit.CAPACITY_BUSY and reason == "capacity: 16 of 16 h200 slots busy; it starts when one frees"


def test_a_job_waiting_for_capacity_holds_back_its_priority_and_lower_but_not_higher() -> None:
    snap = Snapshot(capacity={"h200": 16})
    assert place(snap, _demand("a", gpus=12))[0] is Fit.FITS
    assert place(snap, _demand("big", gpus=8, priority=1))[0] is Fit.CAPACITY_BUSY  # 4 free: it waits, and blocks
    assert snap.waiting == {"h200": 1}
    fit, reason = place(snap, _demand("small", user=2, gpus=4, priority=1))  # would fit the 4 free slots
    assert (fit, reason) == (Fit.BEHIND_QUEUE, "waiting behind earlier jobs for h200 capacity")
    assert place(snap, _demand("low", user=2, gpus=4, priority=0))[0] is Fit.BEHIND_QUEUE
    assert place(snap, _demand("urgent", user=3, gpus=4, priority=2))[0] is Fit.FITS  # higher: it goes first
    assert snap.used["h200"] == 16


@pytest.mark.parametrize(("demand", "fit"), [
    (_demand("capped", max_gpus=4), Fit.QUOTA_GPUS),
    (_demand("one-job", max_jobs=1), Fit.QUOTA_JOBS),
    (_demand("swept", sweep="s", sweep_max=1), Fit.SWEEP_LIMIT),
    (_demand("nowhere", series="b200"), Fit.NO_CAPACITY),
])
def test_a_verdict_other_than_capacity_books_nothing(demand: Demand, fit: Fit) -> None:
    snap = Snapshot(capacity={"h200": 16})
    snap.user_jobs[1] = 1
    snap.user_gpus[1] = 1
    snap.sweep_jobs[(1, "s")] = 1
    before = (dict(snap.used), dict(snap.user_gpus), dict(snap.user_jobs), dict(snap.sweep_jobs), dict(snap.waiting))
    assert place(snap, demand)[0] is fit
    assert (dict(snap.used), dict(snap.user_gpus), dict(snap.user_jobs), dict(snap.sweep_jobs),
            dict(snap.waiting)) == before
    assert place(snap, _demand("next", user=2))[0] is Fit.FITS  # a later job is not held behind it


class _Row(NamedTuple):
    id: str
    user_id: int
    requested_gpus: int
    series_gpus: str
    priority: int
    sweep_id: str | None


def test_demand_of_reads_a_job_row_or_a_row_of_its_columns_alike() -> None:
    job = Job(id="r-1", user_id=7, requested_gpus=12, series_gpus=json.dumps({"h200": 8, "h100": 4}), priority=2,
              sweep_id="s1")
    row = _Row("r-1", 7, 12, json.dumps({"h200": 8, "h100": 4}), 2, "s1")
    expected = Demand("r-1", 7, 12, {"h200": 8, "h100": 4}, 2, 16, 3, "s1", 5)
    assert demand_of(job, 16, 3, 5) == demand_of(row, 16, 3, 5) == expected
    assert demand_of(_Row("r-2", 7, 0, "", 0, None), 0, 0) == Demand("r-2", 7, 0, {}, 0, 0, 0, "", 0)


def test_demand_of_decodes_each_series_shape_once_with_a_cache() -> None:
    shapes: dict[str, dict[str, int]] = {}
    first = demand_of(_Row("a", 1, 8, '{"h200": 8}', 0, None), 0, 0, shapes=shapes)
    second = demand_of(_Row("b", 2, 8, '{"h200": 8}', 0, None), 0, 0, shapes=shapes)
    assert first.series_gpus == {"h200": 8} and second.series_gpus is first.series_gpus
    assert list(shapes) == ['{"h200": 8}']


def test_a_positional_snapshot_holds_back_every_later_job_whatever_its_priority() -> None:
    snap = Snapshot(capacity={"h200": 16}, positional=True)
    assert place(snap, _demand("a", gpus=12))[0] is Fit.FITS
    assert place(snap, _demand("big", gpus=8, priority=0))[0] is Fit.CAPACITY_BUSY
    assert place(snap, _demand("urgent", user=3, gpus=4, priority=2))[0] is Fit.BEHIND_QUEUE  # fair order: it is later
    assert place(snap, _demand("elsewhere", user=3, gpus=4, series="b200"))[0] is Fit.NO_CAPACITY


# ---- decide_queue: the one pass of the place phase (order, place, preempt) ----------------------------------------

def _pass(queue: list[Demand], **options: Any) -> list[tuple[str, Fit]]:
    return [(d.demand.job_id, d.fit) for d in decide_queue(Snapshot(capacity={"h200": 16}), queue, **options)]


def test_without_fair_share_the_pass_keeps_the_queue_order_and_the_old_verdicts() -> None:
    queue = [_demand("hi", gpus=8, priority=2), _demand("a", gpus=4), _demand("b", user=2, gpus=8),
             _demand("c", user=2, gpus=4)]
    snap = Snapshot(capacity={"h200": 16})
    expected = [(d.job_id, place(snap, d)[0]) for d in queue]  # today's loop: place each in the given order
    assert _pass(queue) == expected == [("hi", Fit.FITS), ("a", Fit.FITS), ("b", Fit.CAPACITY_BUSY),
                                        ("c", Fit.BEHIND_QUEUE)]


def _book(usage: dict[int, float]) -> ShareBook:
    return ShareBook(weights={}, default_weight=1.0, usage={(u, "h200"): v for u, v in usage.items()},
                     allocation={}, capacity={"h200": 16}, demand={"h200": set(usage)})


def test_with_fair_share_the_account_with_less_usage_is_placed_first_and_the_book_counts_it() -> None:
    queue = [_demand("a1", gpus=8), _demand("a2", gpus=8), _demand("b1", user=2, gpus=8)]
    book = _book({1: 5000.0, 2: 0.0})
    assert _pass(queue, book=book, fair=True) == [("b1", Fit.FITS), ("a1", Fit.FITS), ("a2", Fit.CAPACITY_BUSY)]
    assert (book.allocation(1, "h200"), book.allocation(2, "h200")) == (8, 8)


def test_the_callers_hold_is_asked_first_and_each_placement_is_told() -> None:
    told: list[str] = []
    queue = [_demand("held"), _demand("ok", gpus=4)]
    decisions = list(decide_queue(Snapshot(capacity={"h200": 16}), queue,
                                  held=lambda d: (Fit.QUOTA_HOURS, "budget") if d.job_id == "held" else None,
                                  placed=lambda d: told.append(d.job_id)))
    assert [(d.demand.job_id, d.fit, d.reason) for d in decisions] == [("held", Fit.QUOTA_HOURS, "budget"),
                                                                       ("ok", Fit.FITS, "")]
    assert told == ["ok"]


def test_a_job_waiting_for_capacity_preempts_and_says_it_waits_for_its_victims() -> None:
    snap = Snapshot(capacity={"h200": 16})
    snap.used["h200"] = 16
    running = [Running("r1", 2, 0, 8, {"h200": 8}, 1000.0), Running("r2", 2, 0, 8, {"h200": 8}, 1500.0)]
    preemptor = Preemptor(snap, running, policy="priority", now=2000.0)
    queue = [_demand("urgent", gpus=8, priority=1), _demand("low", user=3, gpus=8)]
    decisions = list(decide_queue(snap, queue, preemptor=preemptor))
    urgent, low = decisions
    assert (urgent.fit, urgent.reason) == (Fit.CAPACITY_BUSY, "waiting for 1 preempted job(s) to checkpoint and stop")
    assert urgent.claim is not None and [v.job_id for v in urgent.claim.victims] == ["r2"]  # the younger attempt
    assert waits_for_preempted(urgent.reason) and low.claim is None and low.fit is Fit.BEHIND_QUEUE
    assert low.reason == "waiting behind earlier jobs for h200 capacity"


def test_jobs_waiting_for_the_jobs_they_preempted_are_served_first() -> None:
    queue = [_demand("a", gpus=8), _demand("b", user=2, gpus=8), _demand("preemptor", user=3, gpus=8)]
    assert _pass(queue, first={"preemptor"}) == [("preemptor", Fit.FITS), ("a", Fit.FITS),
                                                 ("b", Fit.CAPACITY_BUSY)]
    with pytest.raises(ValueError, match="fair order needs a share book"):
        list(decide_queue(Snapshot(capacity={}), queue, fair=True))
