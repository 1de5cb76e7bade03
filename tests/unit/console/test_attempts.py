"""A job's attempts, on a real SQLite store with an injected clock: what an ended attempt means for its job (table
by table), how a later attempt is prepared to resume, and the control verbs (pause, resume, retry)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import select

from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.errors import Conflict, NotFound
from starforge.console.services.jobs import attempts, control
from starforge.console.services.jobs.interrupts import control_answer, grace_over, poll_seconds
from starforge.console.services.jobs.metrics import record_points
from starforge.console.services.jobs.rows import interrupt_job, set_status
from starforge.console.store.models import Artifact, Job, JobAttempt, MetricPoint, ShareUsage
from starforge.engines import ExecState
from tests.unit.console import test_scheduler_phases as phases
from tests.unit.console.test_scheduler_phases import World

world = phases.world  # the fixture: a console's runtime on a real SQLite store, with a manual clock

# ---- what an ended attempt means: a table --------------------------------------------------------------------


def _job(**fields: object) -> Job:
    base = {"id": "r-1", "attempts": 1, "max_restarts": 0, "restarts": 0, "interrupt": "", "interrupt_by": "",
            "stop_requested": False}
    return Job(**{**base, **fields})


@pytest.mark.parametrize(("fields", "status", "lost", "limit", "expected"), [
    ({}, "succeeded", False, False, ("succeeded", "succeeded", False)),
    ({}, "failed", False, False, ("failed", "failed", False)),  # no restarts asked for
    ({"max_restarts": 1}, "failed", False, False, ("queued", "failed", True)),
    ({"max_restarts": 1, "restarts": 1}, "failed", False, False, ("failed", "failed", False)),  # used up
    ({"max_restarts": 2}, "failed", False, True, ("failed", "failed", False)),  # a limit: it would fail again
    ({}, "failed", True, False, ("queued", "lost", True)),  # a loss: within restarts.after_loss (2 here)
    ({"restarts": 2}, "failed", True, False, ("failed", "lost", False)),
    ({"interrupt": "preempt", "interrupt_by": "r-2"}, "failed", False, False, ("queued", "preempted", False)),
    ({"interrupt": "preempt"}, "succeeded", False, False, ("queued", "preempted", False)),  # any exit
    ({"interrupt": "pause"}, "failed", False, False, ("paused", "paused", False)),
    ({"interrupt": "preempt", "stop_requested": True}, "stopped", False, False, ("stopped", "stopped", False)),
])
def test_what_an_ended_attempt_means(fields: dict[str, object], status: str, lost: bool, limit: bool,
                                     expected: tuple[str, str, bool]) -> None:
    ending = attempts.next_step(_job(**fields), status=status, reason="why", lost=lost, limit=limit, after_loss=2)
    assert (ending.status, ending.outcome, ending.restart) == expected
    assert ending.waiting_for == ("capacity" if ending.status == "queued" else "")


def test_a_job_that_finished_its_training_when_asked_too_late_succeeds() -> None:
    asked = _job(interrupt="preempt")
    done = attempts.next_step(asked, status="succeeded", reason="exit code 0", lost=False, limit=False, after_loss=0,
                              finished=True)
    assert (done.status, done.outcome) == ("succeeded", "succeeded")
    failed = attempts.next_step(asked, status="failed", reason="x", lost=False, limit=False, after_loss=0,
                                finished=True)
    assert failed.status == "queued"  # only a success that registered its model counts as finished


def test_the_reasons_say_what_happens_next() -> None:
    preempted = attempts.next_step(_job(interrupt="preempt", interrupt_by="r-2"), status="succeeded", reason="",
                                   lost=False, limit=False, after_loss=0)
    assert preempted.reason == "preempted by r-2; it resumes from its latest checkpoint when capacity frees"
    restarted = attempts.next_step(_job(max_restarts=2), status="failed", reason="exit code 1", lost=False,
                                   limit=False, after_loss=0)
    assert restarted.reason == ("attempt 1 failed: exit code 1; it starts again from its latest checkpoint "
                                "(1 restart left)")
    paused = attempts.next_step(_job(interrupt="pause", interrupt_by="alice"), status="failed", reason="", lost=False,
                                limit=False, after_loss=0)
    assert paused.reason == "paused by alice after a checkpoint; `sf job resume r-1` puts it back in the queue"


def test_the_control_answer_and_the_grace() -> None:
    quiet = _job(status="running")
    assert control_answer(quiet, grace=60) == {"action": "", "reason": "", "deadline": None, "poll_seconds": 7.5}
    asked = _job(status="running", interrupt="preempt", interrupt_at=100.0, reason="preempted by r-2")
    assert control_answer(asked, grace=60) == {"action": "checkpoint", "reason": "preempted by r-2", "deadline": 160.0,
                                               "poll_seconds": 7.5}
    assert (poll_seconds(0), poll_seconds(16), poll_seconds(600)) == (1.0, 2.0, 15.0)  # an eighth, within 1–15 s
    assert control_answer(replace_status(asked, "queued"), grace=60)["action"] == ""  # it no longer runs
    assert not grace_over(100.0, grace=60, now=159.9) and grace_over(100.0, grace=60, now=160.0)
    assert not grace_over(None, grace=0, now=1e12)


def replace_status(job: Job, status: str) -> Job:
    copy = _job(**{c: getattr(job, c) for c in ("interrupt", "interrupt_at", "reason")})
    copy.status = status
    return copy


# ---- the watch phase records the attempt's end -----------------------------------------------------------------


def _running(world: World, job_id: str, *, started: float, ref: str = "local:1:1:/nowhere") -> None:
    with world.rt.db.write() as db:
        row = db.get(Job, job_id)
        assert row is not None
        set_status(db, row, "running", reason="started", at=started)
        row.executor_ref = ref
        attempts.begin_attempt(db, row, resume=None, now=started)


def test_a_preempted_attempt_goes_back_to_the_queue_as_the_same_job_and_is_charged(world: World) -> None:
    job_id = world.job(status="submitted")
    _running(world, job_id, started=world.clock.now())
    world.clock.advance(600)
    with world.rt.db.write() as db:
        row = db.get(Job, job_id)
        assert row is not None
        interrupt_job(db, row, "preempt", by="r-high", reason="preempted by r-high", at=world.clock.now())
    world.clock.advance(30)
    world.scheduler().finish(job_id, ExecState("exited", exit_code=0))
    row = world.row(job_id)
    assert (row.status, row.waiting_for, row.executor_ref, row.interrupt, row.attempts) == (
        "queued", "capacity", "", "", 1)
    assert row.finished_at is None
    with world.rt.db.read() as db:
        (attempt,) = db.scalars(select(JobAttempt).where(JobAttempt.job_id == job_id)).all()
        usage = db.get(ShareUsage, (world.user.id, "h200"))
        assert (attempt.outcome, attempt.ended_at) == ("preempted", world.clock.now())
        assert usage is not None and usage.gpu_seconds == pytest.approx(630.0)  # 1 GPU for 630 s, decay-free yet


def test_a_job_that_failed_every_attempt_says_each_reason(world: World) -> None:
    job_id = world.job(status="submitted")
    with world.rt.db.write() as db:
        row = db.get(Job, job_id)
        assert row is not None
        row.max_restarts = 1
    for code in (3, 4):
        with world.rt.db.write() as db:
            row = db.get(Job, job_id)
            assert row is not None
            if row.status == "queued":
                set_status(db, row, "submitted", reason="placed")
        _running(world, job_id, started=world.clock.now())
        world.clock.advance(5)
        world.scheduler().finish(job_id, ExecState("exited", exit_code=code))
    row = world.row(job_id)
    assert (row.status, row.attempts, row.restarts) == ("failed", 2, 1)
    assert row.reason.startswith("failed after 2 attempts: attempt 1: ") and "; attempt 2: " in row.reason
    assert "exit code 3" in row.reason and "exit code 4" in row.reason


# ---- a later attempt resumes from the latest checkpoint that still exists --------------------------------------


def test_the_resume_point_is_the_latest_checkpoint_still_in_the_output_folder(world: World, tmp_path: Path) -> None:
    job_id = world.job()
    run_dir = tmp_path / "run"
    for step in (10, 20, 30):
        (run_dir / "out" / f"checkpoint-{step}").mkdir(parents=True)
    (run_dir / "out" / "checkpoint-30").rmdir()  # registered, then deleted by the trainer's rotation
    outside = tmp_path / "elsewhere" / "checkpoint-99"
    outside.mkdir(parents=True)
    with world.rt.db.write() as db:
        for step, folder in ((10, run_dir / "out/checkpoint-10"), (20, run_dir / "out/checkpoint-20"),
                             (30, run_dir / "out/checkpoint-30"), (99, outside)):
            db.add(Artifact(run_id=job_id, kind="checkpoint", path=str(folder), step=step, created_at=time.time()))
        found = attempts.resume_point(db, job_id, str(run_dir))
    assert found == attempts.ResumePoint(run_dir / "out" / "checkpoint-20", 20)


def test_a_later_attempt_drops_the_metrics_beyond_its_checkpoint(world: World) -> None:
    job_id = world.job()
    with world.rt.db.write() as db:
        record_points(db, job_id, [{"key": "train/loss", "step": s, "value": 1.0 / s} for s in range(1, 31)]
                      + [{"key": "summary", "value": 1.0}])
        attempts.drop_replayed(db, job_id, attempts.ResumePoint(Path("/x/checkpoint-20"), 20))
        steps = sorted(s for s in db.scalars(select(MetricPoint.step).where(MetricPoint.run_id == job_id))
                       if s is not None)
        unstepped = db.scalars(select(MetricPoint).where(MetricPoint.step.is_(None))).all()
    assert steps == list(range(1, 21)) and len(unstepped) == 1


# ---- pause, resume, retry --------------------------------------------------------------------------------------


def test_pause_holds_a_waiting_job_and_resume_puts_it_back_in_its_place(world: World) -> None:
    job_id = world.job()
    assert control.pause(world.rt, user=world.user, ref=job_id)["status"] == "paused"
    assert world.scheduler().place() == 0  # a paused job is never placed
    assert control.resume(world.rt, user=world.user, ref=job_id) == {"resumed": True, "status": "queued",
                                                                       "job_ref": job_id}
    assert world.scheduler().place() == 1


def test_pause_asks_a_running_job_to_checkpoint_and_holds_it_once_it_stopped(world: World) -> None:
    job_id = world.job(status="submitted")
    _running(world, job_id, started=world.clock.now())
    answer = control.pause(world.rt, user=world.user, ref=job_id)
    assert answer == {"paused": True, "status": "running", "job_ref": job_id}
    assert world.row(job_id).interrupt == "pause"
    world.scheduler().finish(job_id, ExecState("exited", exit_code=0))
    assert world.row(job_id).status == "paused"


def test_retry_runs_a_failed_job_again_and_refuses_a_running_one(world: World) -> None:
    job_id = world.job(status="submitted")
    _running(world, job_id, started=world.clock.now())
    with pytest.raises(Conflict, match="only a failed or stopped job can be retried"):
        control.retry(world.rt, user=world.user, ref=job_id)
    world.scheduler().finish(job_id, ExecState("exited", exit_code=1))
    assert world.row(job_id).status == "failed"
    assert control.retry(world.rt, user=world.user, ref=job_id)["status"] == "queued"
    row = world.row(job_id)
    assert (row.finished_at, row.exit_code, row.executor_ref) == (None, None, "")


def test_another_accounts_job_cannot_be_paused_resumed_or_retried(world: World) -> None:
    job_id = world.job()
    with world.rt.db.write() as db:
        mallory = accounts.create_user(db, "mallory")
    for verb in (control.pause, control.resume, control.retry):
        with pytest.raises(NotFound):
            verb(world.rt, user=mallory, ref=job_id)
    assert world.row(job_id).status == "queued"


def test_a_later_attempt_is_told_where_it_resumes_and_its_log_marks_it(world: World) -> None:
    from starforge.console.scheduler.claim import claim, load

    job_id = world.job(status="submitted")
    scheduler = world.scheduler()
    (first,) = claim(world.rt, owner=scheduler.owner, now=world.clock.now())
    _executor, request, resume = scheduler.launcher._prepare(load(first, world.rt.submissions.handover), None)
    assert resume is None and request.env["FORGE_ATTEMPT"] == "1" and "FORGE_RESUME_FROM" not in request.env
    checkpoint = request.run_dir / "out" / "checkpoints" / "step_4"
    checkpoint.mkdir(parents=True)
    with world.rt.db.write() as db:
        row = db.get(Job, job_id)
        assert row is not None
        row.run_dir, row.attempts = str(request.run_dir), 1
        row.lease_owner, row.lease_token, row.lease_expires_at = "", "", None
        db.add(Artifact(run_id=job_id, kind="checkpoint", path=str(checkpoint), step=4, created_at=time.time()))
        db.add(JobAttempt(job_id=job_id, number=1, started_at=0.0, ended_at=1.0, outcome="preempted",
                          reason="preempted by r-high", resumed_from="", gpus=1, executor_ref=""))
    (second,) = claim(world.rt, owner=scheduler.owner, now=world.clock.now())
    _executor, request, resume = scheduler.launcher._prepare(load(second, world.rt.submissions.handover), None)
    assert resume == attempts.ResumePoint(checkpoint, 4)
    paths = scheduler.engines.for_series({"h200": 1}).job_paths(request.run_dir)
    assert request.env["FORGE_RESUME_FROM"] == f"{paths.out}/checkpoints/step_4"  # as the job sees it
    assert (request.env["FORGE_RESUME_STEP"], request.env["FORGE_ATTEMPT"]) == ("4", "2")
    log = (request.run_dir / "logs" / "output.log").read_text()
    assert f"attempt 2 of {job_id} (attempt 1 preempted: preempted by r-high): resuming from step_4 (step 4)" in log
