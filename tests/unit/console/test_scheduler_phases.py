"""The scheduler's phases, one at a time, on a real SQLite store and an injected clock: time moves when the test says
so (leases expire, restarts reconcile, every status change is stamped with the scheduler's time), never by sleeping.
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from starforge.console.app import build_console
from starforge.console.scheduler import ManualClock, Scheduler
from starforge.console.scheduler.claim import LEASE_SECONDS, claim, load
from starforge.console.scheduling_config import FairShareSettings, PreemptionSettings
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.context import Runtime
from starforge.console.services.jobs.rows import build_job, create_job, set_status, stop_job
from starforge.console.services.leadership import LostLead, Member, check, take
from starforge.console.services.quota import caps as quota
from starforge.console.settings import load_settings
from starforge.console.store.models import Artifact, Job, JobEvent
from starforge.contract import parse_or_raise
from starforge.engines import Isolation, LocalExecutor
from starforge.engines.runtimes import Runtimes

DOC = {
    "apiVersion": "forge/v2", "kind": "TrainingJob", "metadata": {"name": "toy", "project": "lab", "owner": "alice"},
    "spec": {"recipe": {"name": "tinyrl/grpo", "version": "1.0.0", "digest": "sha256:" + "0" * 64},
             "source": {"exp": "experiments/toy"},
             "framework": {"kind": "tinyrl", "version": "1.0.0", "runtime_id": "tinyrl-1.0.0"},
             "resources": {"pools": [{"name": "all", "nodes": 1, "gpus_per_node": 1, "series": "h200"}]}},
    "provenance": {"core_version": "0.4.0"},
}


@dataclass
class World:
    rt: Runtime
    clock: ManualClock
    user: accounts.UserView
    runtimes: Runtimes

    def scheduler(self) -> Scheduler:
        """Return a scheduler of a console process (each call: another process, with its own lease owner name)."""
        executor = LocalExecutor({}, gpus={}, isolation=Isolation.none(self.rt.settings.state_dir))
        return Scheduler(self.rt, executor, clock=self.clock, runtimes=self.runtimes)

    def job(self, *, status: str = "queued", gpus: int = 1, doc: dict[str, Any] | None = None) -> str:
        """Add a job of `gpus` h200 slots in `status` and return its id."""
        spec = parse_or_raise(replace_pools(doc or DOC, gpus))
        with self.rt.db.write() as db:
            job = create_job(db, build_job(user_id=self.user.id, username=self.user.username, spec=spec,
                                           exp="experiments/toy", profile="h200", priority=0, meta={}, resolved={},
                                           package_sha=""))
            set_status(db, job, status, reason="admitted")  # queued: for nothing yet (a quota that was just raised)
            return job.id

    def row(self, job_id: str) -> Job:
        with self.rt.db.read() as db:
            job = db.get(Job, job_id)
            assert job is not None
            db.expunge(job)
            return job

    def last_event_at(self, job_id: str) -> float:
        with self.rt.db.read() as db:
            events = db.scalars(select(JobEvent).where(JobEvent.job_id == job_id).order_by(JobEvent.id)).all()
            return events[-1].at


def replace_pools(doc: dict[str, Any], gpus: int) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(doc))
    out["spec"]["resources"]["pools"][0]["gpus_per_node"] = gpus
    return out


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    settings = load_settings(state_dir=tmp_path / "state", run_background=False, capacity={"h200": 2})
    settings = replace(settings, runtimes=replace(settings.runtimes, cache_dir=tmp_path / "cache",
                                                  hub_cache=tmp_path / "hub"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        console = build_console(settings)
    rt, db = console.runtime, console.runtime.db
    with db.write() as session:
        alice = accounts.create_user(session, "alice")
        quota.set_quota(session, alice, {"max_concurrent_gpus": 0, "max_concurrent_jobs": 0}, settings.quota)
    yield World(rt, ManualClock(), alice, console.runtimes)
    console.runtimes.shutdown()
    db.dispose()


def test_place_decides_the_queue_in_order_and_stamps_each_change_with_the_clock(world: World) -> None:
    first, second, third = world.job(), world.job(), world.job(gpus=2)
    world.clock.advance(30)
    assert world.scheduler().place() == 2  # two slots: the first two fit, the third waits for both
    assert [world.row(j).status for j in (first, second, third)] == ["submitted", "submitted", "queued"]
    assert world.row(third).reason == "capacity: 2 of 2 h200 slots busy; it starts when one frees"
    assert world.last_event_at(first) == world.last_event_at(third) == world.clock.now()
    world.clock.advance(30)
    assert world.scheduler().place() == 0
    assert world.last_event_at(third) == world.clock.now() - 30  # a job waiting for the same thing is not rewritten


def test_a_lease_holds_a_placed_job_for_its_console_until_it_expires(world: World) -> None:
    job_id = world.job(status="submitted")
    leased = claim(world.rt, owner="console-a", now=world.clock.now())
    assert [row.lease.job_id for row in leased] == [job_id]
    assert world.row(job_id).lease_expires_at == world.clock.now() + LEASE_SECONDS
    world.clock.advance(LEASE_SECONDS - 1)  # console-a went away without starting it
    assert claim(world.rt, owner="console-b", now=world.clock.now()) == []
    world.clock.advance(2)
    again = claim(world.rt, owner="console-b", now=world.clock.now())
    assert [row.lease.job_id for row in again] == [job_id]
    assert again[0].lease.token != leased[0].lease.token and world.row(job_id).lease_owner == "console-b"


def test_a_claimed_job_is_loaded_once_into_a_frozen_object(world: World) -> None:
    job_id = world.job(status="submitted")
    (row,) = claim(world.rt, owner="console-a", now=world.clock.now())
    job = load(row, world.rt.submissions.handover)
    assert (job.id, job.username, job.profile, dict(job.series_gpus), job.exp) == (
        job_id, "alice", "h200", {"h200": 1}, "experiments/toy")
    assert job.spec == parse_or_raise(json.loads(world.row(job_id).spec_json))
    with pytest.raises(AttributeError):
        job.profile = "cpu"  # type: ignore[misc]


def test_a_job_whose_stored_spec_no_longer_parses_fails_at_its_claim(world: World) -> None:
    job_id = world.job(status="submitted")
    with world.rt.db.write() as db:
        row = db.get(Job, job_id)
        assert row is not None
        row.spec_json = json.dumps({**DOC, "apiVersion": "forge/v1"})
    world.clock.advance(5)
    assert world.scheduler().launch() == 0
    job = world.row(job_id)
    assert job.status == "failed" and job.reason.startswith("the job could not be launched: JobSpecError: apiVersion")
    assert (job.lease_token, job.finished_at) == ("", world.clock.now())


def test_a_recipe_gone_from_the_catalog_fails_the_claimed_job_with_the_reason(world: World) -> None:
    gone = json.loads(json.dumps(DOC))
    gone["spec"]["recipe"]["name"] = "tinyrl/retired"
    job_id = world.job(status="submitted", doc=gone)
    assert world.scheduler().launch() == 0
    job = world.row(job_id)
    assert (job.status, job.reason) == ("failed", "recipe tinyrl/retired is no longer in the served catalog")
    assert world.last_event_at(job_id) == world.clock.now()


def test_watch_stops_a_placed_job_that_never_started_at_the_clocks_time(world: World) -> None:
    job_id = world.job(status="submitted")
    with world.rt.db.write() as db:
        row = db.get(Job, job_id)
        assert row is not None
        stop_job(db, row, "stopped on request")
    world.clock.advance(7)
    world.scheduler().watch()
    job = world.row(job_id)
    assert (job.status, job.reason) == ("stopped", "stopped on request before it started")
    assert job.finished_at == world.clock.now()


def test_reconcile_after_a_restart_prepares_again_and_finishes_what_was_lost(world: World) -> None:
    preparing, orphan = world.job(status="submitted"), world.job(status="submitted")
    with world.rt.db.write() as db:
        for job_id, status in ((preparing, "preparing"), (orphan, "running")):
            row = db.get(Job, job_id)
            assert row is not None
            row.lease_owner, row.lease_token = "console-gone", "t"
            set_status(db, row, status, reason="before the restart")
    world.clock.advance(3600)
    world.scheduler().reconcile()
    again, lost = world.row(preparing), world.row(orphan)
    assert (again.status, again.lease_token) == ("submitted", "")
    assert again.reason == "the console restarted while the job's runtime was built; preparing it again"
    # lost before it started: queued again, within the deployment's restarts after a loss (restarts.after_loss)
    assert (lost.status, lost.waiting_for, lost.restarts) == ("queued", "capacity", 1)
    assert lost.reason == ("the console restarted before the job was started; it starts again from its latest "
                           "checkpoint (2 restarts left)")
    assert lost.finished_at is None and world.last_event_at(preparing) == world.clock.now()


def test_a_cycle_measures_its_phases_on_the_clock_without_waiting(world: World,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    world.job()
    scheduler = world.scheduler()
    caplog.set_level("INFO", logger="starforge.scheduler")
    scheduler.cycle()  # the clock does not move: each phase took 0.0 ms of it
    assert "place: 1 job(s) in 0.0 ms" in caplog.text


# ---- the place phase with fair share and preemption ----------------------------------------------------------------

def _account(world: World, name: str) -> accounts.UserView:
    with world.rt.db.write() as db:
        user = accounts.create_user(db, name)
        quota.set_quota(db, user, {"max_concurrent_gpus": 0, "max_concurrent_jobs": 0}, world.rt.settings.quota)
        return user


def _add(world: World, user: accounts.UserView, *, status: str = "queued", priority: int = 0,
         sweep: str = "") -> str:
    """Add a 1-slot h200 job of `user` in `status` (running: its attempt started at the clock's time), submitted
    a second after the one before."""
    world.clock.advance(1)
    spec = parse_or_raise(replace_pools(DOC, 1))
    with world.rt.db.write() as db:
        job = create_job(db, build_job(user_id=user.id, username=user.username, spec=spec, exp="experiments/toy",
                                       profile="h200", priority=priority, meta={}, resolved={}, package_sha="",
                                       sweep_id=sweep))
        job.submitted_at = world.clock.now()
        set_status(db, job, "queued", reason="admitted")  # for nothing yet: the next placement says what
        if status == "running":
            set_status(db, job, "submitted", reason="placed")
            set_status(db, job, "running", reason="started")
            job.attempts, job.attempt_started_at = 1, world.clock.now()
        return job.id


def _end(world: World, job_id: str, status: str = "succeeded") -> None:
    with world.rt.db.write() as db:
        job = db.get(Job, job_id)
        assert job is not None
        set_status(db, job, status, reason="ended")
        job.interrupt = ""


def _with(world: World, **settings: Any) -> World:
    return replace(world, rt=replace(world.rt, settings=replace(world.rt.settings, **settings)))


@pytest.mark.parametrize("fair", [True, False])
def test_a_slot_that_frees_goes_to_the_account_with_less_usage_not_to_the_longest_queue(world: World,
                                                                                          fair: bool) -> None:
    world = _with(world, fair_share=FairShareSettings(enabled=fair))
    bob = _account(world, "bob")
    alice_jobs = [_add(world, world.user, status="running", sweep="s1") for _ in range(2)]
    world.clock.advance(600)
    alice_jobs += [_add(world, world.user, sweep="s1") for _ in range(4)]
    world.clock.advance(60)
    bobs = _add(world, bob)
    assert world.scheduler().place() == 0  # both slots busy
    world.clock.advance(600)
    _end(world, alice_jobs[0])
    assert world.scheduler().place() == 1
    placed = [job_id for job_id in (*alice_jobs[2:], bobs) if world.row(job_id).status == "submitted"]
    assert placed == ([bobs] if fair else [alice_jobs[2]])  # off: today's order, first come first served
    waiting = world.row(alice_jobs[3] if fair else bobs)
    assert (waiting.status, waiting.reason) == ("queued", "waiting behind earlier jobs for h200 capacity")


def test_a_higher_priority_job_preempts_exactly_one_lower_priority_job_once(world: World) -> None:
    world = _with(world, preemption=PreemptionSettings(policy="priority", grace_seconds=90))
    bob = _account(world, "bob")
    older = _add(world, world.user, status="running")
    world.clock.advance(300)
    younger = _add(world, world.user, status="running")
    world.clock.advance(60)
    urgent = _add(world, bob, priority=5)
    world.clock.advance(10)
    assert world.scheduler().place() == 0
    victim, spared, waiting = world.row(younger), world.row(older), world.row(urgent)
    assert (victim.interrupt, victim.interrupt_by, victim.interrupt_at) == ("preempt", urgent, world.clock.now())
    assert victim.status == "running" and victim.reason == (
        f"preempted by {urgent} (priority 5 > 0): saving a checkpoint, then stopping within 90 s")
    assert spared.interrupt == ""  # the older attempt would lose more work
    assert (waiting.status, waiting.waiting_for, waiting.reason) == (
        "queued", "capacity", "waiting for 1 preempted job(s) to checkpoint and stop")
    world.clock.advance(30)
    assert world.scheduler().place() == 0  # the victim is still saving: no second one
    assert world.row(older).interrupt == "" and world.row(younger).interrupt_at == world.clock.now() - 30
    assert world.last_event_at(urgent) == world.clock.now() - 30  # not rewritten either
    _end(world, younger, "queued")  # it stopped (the watch phase requeues it in its place)
    world.clock.advance(5)
    assert world.scheduler().place() == 1
    assert world.row(urgent).status == "submitted" and world.row(younger).status == "queued"


def test_the_victim_is_the_job_with_the_latest_checkpoint(world: World) -> None:
    world = _with(world, preemption=PreemptionSettings(policy="priority"))
    bob = _account(world, "bob")
    checkpointed = _add(world, world.user, status="running")
    world.clock.advance(300)
    younger = _add(world, world.user, status="running")
    world.clock.advance(200)
    with world.rt.db.write() as db:
        db.add(Artifact(run_id=checkpointed, kind="checkpoint", path="ckpt/step-10", step=10,
                        created_at=world.clock.now() - 10))
    urgent = _add(world, bob, priority=1)
    world.scheduler().place()
    assert (world.row(checkpointed).interrupt, world.row(younger).interrupt) == ("preempt", "")
    assert world.row(urgent).reason == "waiting for 1 preempted job(s) to checkpoint and stop"


def test_without_preemption_nothing_is_interrupted_and_a_paused_job_is_not_placed(world: World) -> None:
    bob = _account(world, "bob")
    running = [_add(world, world.user, status="running") for _ in range(2)]
    urgent = _add(world, bob, priority=5)
    paused = _add(world, bob, priority=9)
    with world.rt.db.write() as db:
        job = db.get(Job, paused)
        assert job is not None
        set_status(db, job, "paused", reason="paused by bob")
    assert world.scheduler().place() == 0
    assert [world.row(job_id).interrupt for job_id in running] == ["", ""]
    assert world.row(urgent).reason == "capacity: 2 of 2 h200 slots busy; it starts when one frees"
    _end(world, running[0])
    assert world.scheduler().place() == 1
    assert (world.row(urgent).status, world.row(paused).status) == ("submitted", "paused")


def test_a_scheduler_that_lost_the_lead_changes_nothing(world: World) -> None:
    job_id, waiting = world.job(status="submitted"), world.job()
    with world.rt.db.write() as db:
        mine = take(db, Member("old-leader", "c0ffee", "host", 1), now=world.clock.now())
    fenced = replace(world.rt, db=world.rt.db.fenced(functools.partial(check, epoch=mine)))
    executor = LocalExecutor({}, gpus={}, isolation=Isolation.none(world.rt.settings.state_dir))
    paused = Scheduler(fenced, executor, clock=world.clock, runtimes=world.runtimes, epoch=mine)
    with world.rt.db.write() as db:  # while it was paused, another process took the lead
        take(db, Member("new-leader", "c0ffee", "host", 2), now=world.clock.now())
    for phase in (paused.launch, paused.place, paused.watch, paused.reconcile):
        with pytest.raises(LostLead):
            phase()
    row = world.row(job_id)
    assert (row.status, row.lease_token, row.attempts, row.executor_ref) == ("submitted", "", 0, "")
    assert world.row(waiting).status == "queued"


def test_taking_the_lead_voids_the_leases_of_earlier_leaders(world: World) -> None:
    job_id = world.job(status="submitted")
    (leased,) = claim(world.rt, owner="console-dead", now=world.clock.now())
    assert world.row(job_id).lease_token == leased.lease.token
    world.scheduler().reconcile()  # what a process does on taking the lead
    assert world.row(job_id).lease_token == ""
    assert [row.lease.job_id for row in claim(world.rt, owner="console-new", now=world.clock.now())] == [job_id]
