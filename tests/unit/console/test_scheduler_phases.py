"""The scheduler's phases, one at a time, on a real SQLite store and an injected clock: time moves when the test says
so (leases expire, restarts reconcile, every status change is stamped with the scheduler's time), never by sleeping.
"""

from __future__ import annotations

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
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.context import Runtime
from starforge.console.services.jobs.rows import build_job, create_job, set_status, stop_job
from starforge.console.services.quota import caps as quota
from starforge.console.settings import load_settings
from starforge.console.store.models import Job, JobEvent
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
