"""`capacity.decide` on hand-made snapshots: each verdict, the order of the checks, and what `assume` and `block` book.

Every case goes through the public signature `decide(snap, demand) -> (Fit, reason)`; the reason is what the user
reads (`sf job ls`, the submit answer), so it is asserted in full.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from starforge.console.services.quota.capacity import Demand, Fit, Snapshot, assume, block, decide

ALICE, BOB = 1, 2


def _demand(**changes: Any) -> Demand:
    """Alice's 8-GPU job on h200, priority 0, within a quota of 16 GPUs and 4 jobs, in no sweep."""
    base = Demand(job_id="r-job", user_id=ALICE, gpus=8, series_gpus={"h200": 8}, priority=0, max_gpus=16, max_jobs=4)
    return replace(base, **changes)


def _snap(**fields: Any) -> Snapshot:
    """A deployment of 16 h200 slots and 4 cpu slots, idle unless `fields` say otherwise."""
    fields.setdefault("capacity", {"h200": 16, "cpu": 4})
    return Snapshot(**fields)


CASES: list[tuple[str, Snapshot, Demand, Fit, str]] = [
    ("an idle deployment", _snap(), _demand(), Fit.FITS, ""),
    ("exactly the free slots", _snap(used={"h200": 8}), _demand(), Fit.FITS, ""),
    ("every slot of the deployment at once", _snap(), _demand(gpus=16, series_gpus={"h200": 16}), Fit.FITS, ""),
    ("exactly the GPU quota", _snap(user_gpus={ALICE: 8}, used={"h200": 8}), _demand(), Fit.FITS, ""),
    ("the last job of the quota", _snap(user_jobs={ALICE: 3}), _demand(), Fit.FITS, ""),
    ("unlimited quotas (0)", _snap(user_gpus={ALICE: 100}, user_jobs={ALICE: 100}),
     _demand(max_gpus=0, max_jobs=0), Fit.FITS, ""),
    ("a job on no series at all", _snap(), _demand(gpus=0, series_gpus={}), Fit.FITS, ""),
    ("another account's usage does not count", _snap(user_gpus={BOB: 16}, user_jobs={BOB: 4}), _demand(),
     Fit.FITS, ""),
    ("a lower priority waits on the series", _snap(waiting={"h200": -1}), _demand(), Fit.FITS, ""),
    ("an equal priority waits on another series", _snap(waiting={"cpu": 5}), _demand(), Fit.FITS, ""),
    ("a higher priority passes a waiting job", _snap(waiting={"h200": 3}), _demand(priority=4), Fit.FITS, ""),
    ("a sweep below its parallel limit", _snap(sweep_jobs={(ALICE, "s-1"): 1}),
     _demand(sweep_id="s-1", sweep_max=2), Fit.FITS, ""),
    ("a sweep without a parallel limit", _snap(sweep_jobs={(ALICE, "s-1"): 9}),
     _demand(sweep_id="s-1", sweep_max=0), Fit.FITS, ""),
    ("another account's sweep of the same id", _snap(sweep_jobs={(BOB, "s-1"): 2}),
     _demand(sweep_id="s-1", sweep_max=2), Fit.FITS, ""),
    ("a series this deployment has no slot of", _snap(), _demand(series_gpus={"b300": 8}), Fit.NO_CAPACITY,
     "no b300 capacity in this deployment: the job waits until an operator adds b300 capacity"),
    ("a series listed with 0 slots", _snap(capacity={"h200": 0}), _demand(), Fit.NO_CAPACITY,
     "no h200 capacity in this deployment: the job waits until an operator adds h200 capacity"),
    ("more slots than the deployment has in total", _snap(), _demand(gpus=24, series_gpus={"h200": 24}),
     Fit.NO_CAPACITY,
     "this job needs 24 h200 slots but the deployment has 16: the job waits until an operator adds h200 capacity"),
    ("the first series without capacity is named", _snap(),
     _demand(gpus=16, series_gpus={"h200": 8, "a100": 4, "b300": 4}), Fit.NO_CAPACITY,
     "no a100 capacity in this deployment: the job waits until an operator adds a100 capacity"),
    ("a sweep at its parallel limit", _snap(sweep_jobs={(ALICE, "s-1"): 2}),
     _demand(sweep_id="s-1", sweep_max=2), Fit.SWEEP_LIMIT,
     "sweep s-1 runs at most 2 at a time; it starts when one of its 2 active runs ends"),
    ("one GPU above the GPU quota", _snap(user_gpus={ALICE: 9}), _demand(), Fit.QUOTA_GPUS,
     "quota: your active jobs use 9 of 16 GPUs and this job needs 8; it starts when they finish"),
    ("the job quota reached", _snap(user_jobs={ALICE: 4}), _demand(), Fit.QUOTA_JOBS,
     "quota: 4 of 4 concurrent jobs are active; it starts when one ends"),
    ("an equal priority waits for the series (FIFO, though the job would fit)", _snap(waiting={"h200": 0}), _demand(),
     Fit.BEHIND_QUEUE,
     "waiting behind earlier jobs for h200 capacity"),
    ("a higher priority waits for one of the series", _snap(waiting={"cpu": 2}),
     _demand(gpus=9, series_gpus={"h200": 8, "cpu": 1}, priority=1), Fit.BEHIND_QUEUE,
     "waiting behind earlier jobs for cpu capacity"),
    ("one slot short", _snap(used={"h200": 9}), _demand(), Fit.CAPACITY_BUSY,
     "capacity: 9 of 16 h200 slots busy; it starts when one frees"),
    ("all pools or none: the second series is busy", _snap(used={"cpu": 4}),
     _demand(gpus=9, series_gpus={"h200": 8, "cpu": 1}), Fit.CAPACITY_BUSY,
     "capacity: 4 of 4 cpu slots busy; it starts when one frees"),
    # the order of the checks: the first that fails names the reason
    ("no capacity before the sweep limit and the quotas",
     _snap(capacity={}, sweep_jobs={(ALICE, "s-1"): 1}, user_gpus={ALICE: 16}, user_jobs={ALICE: 4}),
     _demand(sweep_id="s-1", sweep_max=1), Fit.NO_CAPACITY,
     "no h200 capacity in this deployment: the job waits until an operator adds h200 capacity"),
    ("the sweep limit before the quotas",
     _snap(sweep_jobs={(ALICE, "s-1"): 1}, user_gpus={ALICE: 16}, user_jobs={ALICE: 4}),
     _demand(sweep_id="s-1", sweep_max=1), Fit.SWEEP_LIMIT,
     "sweep s-1 runs at most 1 at a time; it starts when one of its 1 active runs ends"),
    ("the GPU quota before the job quota", _snap(user_gpus={ALICE: 16}, user_jobs={ALICE: 4}), _demand(),
     Fit.QUOTA_GPUS, "quota: your active jobs use 16 of 16 GPUs and this job needs 8; it starts when they finish"),
    ("the job quota before the queue", _snap(user_jobs={ALICE: 4}, waiting={"h200": 9}), _demand(),
     Fit.QUOTA_JOBS, "quota: 4 of 4 concurrent jobs are active; it starts when one ends"),
    ("the queue before busy slots", _snap(waiting={"h200": 0}, used={"h200": 16}),
     _demand(), Fit.BEHIND_QUEUE, "waiting behind earlier jobs for h200 capacity"),
]


@pytest.mark.parametrize(("snap", "demand", "fit", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decide(snap: Snapshot, demand: Demand, fit: Fit, reason: str) -> None:
    assert decide(snap, demand) == (fit, reason)


def test_decide_only_reads_the_snapshot() -> None:
    snap = _snap(used={"h200": 4}, user_gpus={ALICE: 4}, user_jobs={ALICE: 1}, waiting={"cpu": 0})
    before = (dict(snap.capacity), dict(snap.used), dict(snap.user_gpus), dict(snap.user_jobs), dict(snap.waiting),
              dict(snap.sweep_jobs))
    decide(snap, _demand())
    assert (snap.capacity, snap.used, snap.user_gpus, snap.user_jobs, snap.waiting, snap.sweep_jobs) == before


@pytest.mark.parametrize(("fit", "status", "waiting_for"), [
    (Fit.FITS, "submitted", ""),
    (Fit.NO_CAPACITY, "pending", "series"),
    (Fit.SWEEP_LIMIT, "queued", "sweep"),
    (Fit.QUOTA_GPUS, "queued", "quota"),
    (Fit.QUOTA_JOBS, "queued", "quota"),
    (Fit.QUOTA_HOURS, "queued", "budget"),
    (Fit.BEHIND_QUEUE, "queued", "capacity"),
    (Fit.CAPACITY_BUSY, "queued", "capacity"),
])
def test_each_verdict_names_the_status_and_what_the_job_waits_for(fit: Fit, status: str, waiting_for: str) -> None:
    assert (fit.status, fit.waiting_for) == (status, waiting_for)


def test_every_verdict_has_a_status_and_a_wait() -> None:
    assert {fit.status for fit in Fit} == {"submitted", "pending", "queued"}
    assert all(fit.waiting_for or fit is Fit.FITS for fit in Fit)


def test_assume_books_the_job_so_the_next_decision_counts_it() -> None:
    snap = _snap()
    job = _demand(sweep_id="s-1", sweep_max=3, gpus=9, series_gpus={"h200": 8, "cpu": 1})
    assume(snap, job)
    assert (snap.used, snap.user_gpus, snap.user_jobs, dict(snap.sweep_jobs)) == (
        {"h200": 8, "cpu": 1}, {ALICE: 9}, {ALICE: 1}, {(ALICE, "s-1"): 1})
    assert decide(snap, _demand(job_id="r-next", gpus=9, series_gpus={"h200": 9}))[0] is Fit.QUOTA_GPUS
    assume(snap, job)
    assert (snap.used, snap.user_gpus, snap.user_jobs, dict(snap.sweep_jobs)) == (
        {"h200": 16, "cpu": 2}, {ALICE: 18}, {ALICE: 2}, {(ALICE, "s-1"): 2})
    assert decide(snap, _demand(user_id=BOB, job_id="r-bob", gpus=1, series_gpus={"h200": 1})) == (
        Fit.CAPACITY_BUSY, "capacity: 16 of 16 h200 slots busy; it starts when one frees")


def test_assume_counts_a_sweep_only_for_a_job_of_a_sweep() -> None:
    snap = _snap()
    one = _demand(gpus=1, series_gpus={"h200": 1})
    assume(snap, one)
    assert dict(snap.sweep_jobs) == {}
    assume(snap, replace(one, sweep_id="s-1", sweep_max=1))
    assert decide(snap, replace(one, job_id="r-2", sweep_id="s-1", sweep_max=1))[0] is Fit.SWEEP_LIMIT
    assert decide(snap, replace(one, job_id="r-3", sweep_id="s-2", sweep_max=1)) == (Fit.FITS, "")


def test_block_queues_equal_and_lower_priorities_behind_the_job() -> None:
    snap = _snap()
    block(snap, _demand(priority=2, gpus=9, series_gpus={"h200": 8, "cpu": 1}))
    assert snap.waiting == {"h200": 2, "cpu": 2}
    assert decide(snap, _demand(job_id="r-same", priority=2))[0] is Fit.BEHIND_QUEUE
    assert decide(snap, _demand(job_id="r-low", priority=1))[0] is Fit.BEHIND_QUEUE
    assert decide(snap, _demand(job_id="r-high", priority=3)) == (Fit.FITS, "")
    assert snap.used == {} and snap.user_jobs == {}  # waiting books no capacity


def test_block_keeps_the_highest_waiting_priority() -> None:
    snap = _snap(waiting={"h200": 5})
    block(snap, _demand(priority=1))
    assert snap.waiting == {"h200": 5}
    block(snap, _demand(priority=7))
    assert snap.waiting == {"h200": 7}


def test_a_negative_priority_still_queues_behind_a_blocked_job_of_the_same_priority() -> None:
    snap = _snap()
    assert decide(snap, _demand(priority=-5)) == (Fit.FITS, "")  # nothing waits: no floor to collide with
    block(snap, _demand(priority=-5))
    assert decide(snap, _demand(job_id="r-2", priority=-5))[0] is Fit.BEHIND_QUEUE
