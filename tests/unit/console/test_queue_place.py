"""The place `sf job status` shows a waiting job: the order the scheduler serves the queue in — fair order when fair
share is on (an account that ran less goes first), priority then submission time when it is off."""

from __future__ import annotations

from dataclasses import replace

from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.jobs.queries import queue_place
from starforge.console.services.jobs.rows import build_job, create_job, set_status
from starforge.console.services.quota import shares
from starforge.console.store.models import Job
from starforge.contract import parse_or_raise
from tests.unit.console import test_scheduler_phases as phases
from tests.unit.console.test_scheduler_phases import DOC, World

world = phases.world


def _waiting(world: World, user: accounts.UserView) -> str:
    with world.rt.db.write() as db:
        job = create_job(db, build_job(user_id=user.id, username=user.username, spec=parse_or_raise(DOC),
                                       exp="experiments/toy", profile="h200", priority=0, meta={}, resolved={},
                                       package_sha=""))
        set_status(db, job, "queued", reason="capacity", waiting_for="capacity")
        return job.id


def test_a_waiting_job_of_an_account_that_ran_less_is_served_first(world: World) -> None:
    with world.rt.db.write() as db:
        bob = accounts.create_user(db, "bob")
    alices = [_waiting(world, world.user) for _ in range(3)]
    bobs = _waiting(world, bob)  # submitted last
    with world.rt.db.write() as db:  # alice ran 10 GPU-hours lately, bob nothing
        shares.charge(db, world.user.id, {"h200": 1}, 36_000, now=world.clock.now(),
                      half_life=world.rt.settings.fair_share.half_life_seconds)
    fair = world.rt.settings.fair_share
    with world.rt.db.read() as db:
        places = {job_id: queue_place(db, db.get(Job, job_id), fair_share=fair, capacity={"h200": 2})
                  for job_id in (*alices, bobs)}
        fifo = queue_place(db, db.get(Job, bobs), fair_share=replace(fair, enabled=False))
    assert places[bobs] == (1, 4) and [places[j] for j in alices] == [(2, 4), (3, 4), (4, 4)]
    assert fifo == (4, 4)  # fair share off: first come, first served
