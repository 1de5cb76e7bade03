"""Group commit decides and stores a batch exactly as one-at-a-time commits would, and one bad submission never
takes its batch with it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from starforge.console.app import bootstrap_admin, build_console, create_app
from starforge.console.scheduler import Scheduler
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.admission import AdmissionRequest, admit
from starforge.console.services.context import Runtime
from starforge.console.services.jobs.rows import set_status
from starforge.console.services.jobs.submission_writer import Admitted
from starforge.console.services.quota import caps as quota
from starforge.console.settings import load_settings
from starforge.console.store.models import Admission, Idempotency, Job, User
from starforge.contract import dumps, parse_or_raise
from starforge.engines import LocalExecutor
from tests.integration.helpers import spec_for

Make = Callable[..., Admitted]


@pytest.fixture
def console(tmp_path: Path) -> Iterator[tuple[Runtime, Make]]:
    settings = load_settings(state_dir=tmp_path, run_background=False, capacity={"cpu": 2, "h200": 16})
    built = build_console(settings)
    rt = built.runtime
    token = bootstrap_admin(rt)
    assert token
    with TestClient(create_app(settings, built)) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        doc = spec_for(client, series="h200", gpus=8)
    user = rt.accounts.user(token)
    with rt.db.write() as db:  # capacity, not the quota, is what holds a job back here
        quota.set_quota(db, user, {"max_concurrent_gpus": 0, "max_concurrent_jobs": 0}, settings.quota)

    def make(exp: str, key: str | None = None) -> Admitted:
        with rt.db.read() as db:
            decision = admit(db, settings, rt.catalog, AdmissionRequest(user, doc, "h200"))
        assert decision.spec is not None, decision.problems
        return Admitted(user, decision.spec, decision, exp=exp, profile="h200", meta={}, package_sha="",
                        idempotency_key=key)

    yield rt, make
    rt.db.dispose()


def _batch_user(make: Make) -> Any:
    return make("experiments/who").user  # the account every `make` submits as (nothing is committed here)


def _jobs(rt: Runtime) -> list[tuple[str, str, str]]:
    with rt.db.read() as db:
        return [(j.exp, j.status, j.waiting_for) for j in db.scalars(select(Job).order_by(Job.submitted_at))]


def test_a_batch_decides_as_commits_one_at_a_time_would(console: tuple[Runtime, Make]) -> None:
    rt, make = console
    batch = [make(f"experiments/e{i}") for i in range(4)]  # 16 h200 slots, 8 each
    rt.submissions.commit_batch(batch)
    assert [item.outcome.status_code for item in batch if item.outcome] == [200, 200, 202, 202]
    assert [status for _exp, status, _why in _jobs(rt)] == ["submitted", "submitted", "queued", "queued"]
    assert batch[2].outcome and "slots busy" in batch[2].outcome.body["message"]
    assert batch[3].outcome and "behind earlier jobs" in batch[3].outcome.body["message"]


def test_one_key_twice_in_a_batch_makes_one_job(console: tuple[Runtime, Make]) -> None:
    rt, make = console
    batch = [make("experiments/k", key="K-1"), make("experiments/k", key="K-1")]
    rt.submissions.commit_batch(batch)
    assert batch[0].outcome == batch[1].outcome
    assert len(_jobs(rt)) == 1
    with rt.db.read() as db:
        assert len(db.scalars(select(Idempotency)).all()) == 1


def test_a_failing_submission_does_not_take_its_batch_with_it(console: tuple[Runtime, Make]) -> None:
    rt, make = console
    with rt.db.write() as db:
        ghost = accounts.create_user(db, "ghost")
    gone = replace(make("experiments/bad"), user=ghost)  # admitted, then its account is deleted before the commit
    with rt.db.write() as db:
        db.delete(db.get(User, ghost.id))
    batch = [make("experiments/a"), gone, make("experiments/c")]
    rt.submissions.commit_batch(batch)
    assert isinstance(batch[1].error, IntegrityError) and batch[1].outcome is None  # its row names no account
    assert batch[0].outcome is not None and batch[2].outcome is not None
    assert [exp for exp, _status, _why in _jobs(rt)] == ["experiments/a", "experiments/c"]
    with rt.db.read() as db:  # the failed one left nothing behind: no audit row, no idempotency record
        assert [a.exp for a in db.scalars(select(Admission).order_by(Admission.id))] == ["experiments/a",
                                                                                         "experiments/c"]
    committed = {item.outcome.body["job_id"] for item in (batch[0], batch[2]) if item.outcome}
    assert {job_id for job_id in committed if rt.submissions.handover.take(job_id) is not None} == committed
    assert len(rt.submissions.handover) == 0  # the failed attempts handed nothing over


def test_each_committed_job_hands_its_admitted_spec_to_the_scheduler(console: tuple[Runtime, Make]) -> None:
    rt, make = console
    batch = [make(f"experiments/h{i}") for i in range(3)]  # two start, one waits: each is handed over
    rt.submissions.commit_batch(batch)
    for item in batch:
        assert item.outcome is not None
        job_id = item.outcome.body["job_id"]
        assert rt.submissions.handover.take(job_id) is item.spec  # the very object admission made
        assert rt.submissions.handover.take(job_id) is None  # taken once
        with rt.db.read() as db:
            row = db.get(Job, job_id)
            assert row is not None
            assert row.spec_json == dumps(item.spec, indent=None)  # stored in the contract's canonical form
            assert parse_or_raise(json.loads(row.spec_json)) == item.spec


def test_a_batch_admitted_apart_never_overspends_the_daily_budget(console: tuple[Runtime, Make]) -> None:
    rt, make = console
    user = _batch_user(make)
    with rt.db.write() as db:  # 20 GPU hours a day; an 8-GPU job with a 1 h limit reserves 8 of them
        quota.set_quota(db, user, {"daily_gpu_hours": 20, "max_job_hours": 1}, rt.settings.quota)
    batch = [make(f"experiments/b{i}") for i in range(4)]  # each admitted alone, against an empty ledger
    rt.submissions.commit_batch(batch)
    assert [item.outcome.status_code for item in batch if item.outcome] == [200, 200, 400, 400]
    refused = batch[2].outcome.body["problems"][0] if batch[2].outcome else {}
    assert (refused["field"], refused["code"]) == ("quota", "quota_exhausted")
    assert refused["data"] == {"used": 0.0, "limit": 20.0, "reserved": 16.0, "needed": 8.0}
    assert len(_jobs(rt)) == 2  # the refused ones store nothing but their audit rows
    with rt.db.read() as db:
        assert [a.verdict for a in db.scalars(select(Admission).order_by(Admission.id))] == [
            "accepted", "accepted", "rejected", "rejected"]


def test_the_scheduler_places_a_queue_as_the_writer_admitted_it(console: tuple[Runtime, Make]) -> None:
    rt, make = console
    batch = [make(f"experiments/p{i}") for i in range(4)]  # 16 h200 slots, 8 each
    rt.submissions.commit_batch(batch)
    admitted = [(status, why) for _exp, status, why in _jobs(rt)]
    with rt.db.read() as db:
        reasons = [job.reason for job in db.scalars(select(Job).order_by(Job.submitted_at))]
    with rt.db.write() as db:  # the same queue again, every job waiting for nothing yet
        for job in db.scalars(select(Job)):
            set_status(db, job, "queued", reason="requeued")
    assert Scheduler(rt, LocalExecutor(rt.capacity, gpus={})).place() == 2
    with rt.db.read() as db:
        placed = [(job.status, job.waiting_for, job.reason) for job in db.scalars(select(Job).order_by(Job.submitted_at))]
    assert [(status, why) for status, why, _reason in placed] == admitted == [
        ("submitted", ""), ("submitted", ""), ("queued", "capacity"), ("queued", "capacity")]
    assert [reason for _status, _why, reason in placed] == reasons
