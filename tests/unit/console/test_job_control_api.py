"""Pause, resume and retry over the API, and what a job's views say of its attempts, on an in-process console
(SQLite, no background loop): both paths of each verb, another account's job a 404, a viewer a 403, a retry of a
job that did not end a 409 with the console's reason, and `resumed_from` at the path its job saw."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from starforge.console import operator
from starforge.console.app import create_app
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.accounts.credentials import UserView
from starforge.console.services.jobs import attempts
from starforge.console.services.jobs import reads as job_reads
from starforge.console.services.jobs.rows import set_status
from starforge.console.settings import load_settings
from starforge.console.store.models import Job
from tests.integration.helpers import spec_for

# the fields of a `/api/jobs/mine` row before attempts were counted: kept as they were (wire-protocol §8.1)
ROW_FIELDS = {"job_ref", "run_id", "name", "exp", "status", "message", "requested_gpus", "gpus", "profile", "recipe",
              "project", "owner", "submitted_at"}


@pytest.fixture()
def console(tmp_path: Path) -> Iterator[tuple[TestClient, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # alembic's, about its own configuration
        app = create_app(load_settings(state_dir=tmp_path / "state", run_background=False, capacity={"cpu": 1},
                                      unplaceable="queue"))  # h200 jobs wait as pending: nothing runs here
    rt = app.state.runtime
    with TestClient(app) as client:
        yield client, rt
    rt.db.dispose()


def _auth(rt: Any, username: str, role: str = "operator") -> dict[str, str]:
    return {"Authorization": f"Bearer {operator.create_token(rt.db, username, role, create=True)}"}


def _user(rt: Any, username: str) -> UserView:
    with rt.db.read() as db:
        return accounts.get_user(db, username)


def _waiting_job(client: TestClient, headers: dict[str, str]) -> str:
    spec = spec_for(TestClient(client.app, headers=headers), series="h200", gpus=8)
    answer = client.post("/api/jobs", headers=headers, files={"spec": (None, json.dumps(spec))})
    assert answer.status_code == 202 and answer.json()["status"] == "pending", answer.text
    return str(answer.json()["job_id"])


def _detail(client: TestClient, headers: dict[str, str], job: str) -> dict[str, Any]:
    answer = client.get("/api/job", params={"id": job}, headers=headers)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


@pytest.mark.parametrize("by_path", [False, True], ids=["wire", "path"])
def test_pause_resume_and_retry_a_job(console: tuple[TestClient, Any], by_path: bool) -> None:
    client, rt = console
    alice = _auth(rt, "alice")
    job = _waiting_job(client, alice)

    def post(verb: str) -> Any:
        if by_path:
            return client.post(f"/api/jobs/{job}/{verb}", headers=alice)
        return client.post(f"/api/job/{verb}", params={"id": job}, headers=alice)

    paused = post("pause")
    assert paused.status_code == 200 and paused.json() == {"paused": True, "status": "paused", "job_ref": job}
    shown = _detail(client, alice, job)
    assert shown["status"] == "paused" and "sf job resume" in shown["message"]
    assert "queue_position" not in shown  # held: it keeps its place but is not among the waiting jobs
    again = post("pause")
    assert again.status_code == 200 and again.json()["paused"] is False and again.json()["status"] == "paused"

    refused = post("retry")  # only a failed or stopped job can be retried: the Conflict's own words
    assert refused.status_code == 409
    assert refused.json()["detail"] == (f"job {job} is paused; only a failed or stopped job can be retried "
                                        "(`sf job resume` for a paused one)")

    resumed = post("resume")
    assert resumed.status_code == 200 and resumed.json() == {"resumed": True, "status": "queued", "job_ref": job}
    assert "queue_position" in _detail(client, alice, job)  # back among the waiting jobs
    assert post("resume").json()["resumed"] is False

    assert client.post("/api/job/stop", params={"id": job}, headers=alice).json()["stopped"] is True
    retried = post("retry")
    assert retried.status_code == 200 and retried.json() == {"retried": True, "status": "queued", "job_ref": job}


def test_another_accounts_job_is_a_404_and_a_viewer_a_403(console: tuple[TestClient, Any]) -> None:
    client, rt = console
    alice, bob, val = _auth(rt, "alice"), _auth(rt, "bob"), _auth(rt, "val", "viewer")
    job = _waiting_job(client, alice)
    for verb in ("pause", "resume", "retry"):
        for answer in (client.post(f"/api/job/{verb}", params={"id": job}, headers=bob),
                       client.post(f"/api/jobs/{job}/{verb}", headers=bob)):
            assert answer.status_code == 404, (verb, answer.text)
            assert answer.json()["detail"] == f"no job {job!r} (see `sf job ls`)"  # as for a job that does not exist
        viewer = client.post(f"/api/job/{verb}", params={"id": job}, headers=val)
        assert viewer.status_code == 403 and viewer.json()["detail"] == f"viewers cannot {verb} jobs"
    assert _detail(client, alice, job)["status"] == "pending"  # nothing changed


def test_a_job_says_its_attempts_and_the_checkpoint_it_resumed_from(console: tuple[TestClient, Any]) -> None:
    client, rt = console
    alice = _auth(rt, "alice")
    job = _waiting_job(client, alice)
    fresh = _detail(client, alice, job)
    assert (fresh["attempts"], fresh["resumed_from"], fresh["resume_step"], fresh["attempt_history"]) == (0, None,
                                                                                                         None, [])
    assert fresh["max_restarts"] == 0 and fresh["restarts"] == 0 and fresh["interrupt"] is None

    run_dir = rt.settings.state_dir / "runs" / "alice" / "toy" / job
    checkpoint = run_dir / "out" / "checkpoint-20"
    checkpoint.mkdir(parents=True)
    with rt.db.write() as db:  # what the scheduler's launch and watch do; nothing runs in this console
        row = db.get(Job, job)
        assert row is not None
        row.run_dir = str(run_dir)
        attempts.begin_attempt(db, row, resume=None, now=100.0)
        attempts.end_attempt(db, row, outcome="preempted", reason="preempted by r-other", now=160.0)
        attempts.begin_attempt(db, row, resume=attempts.ResumePoint(checkpoint, 20), now=200.0)
        set_status(db, row, "queued", reason="waiting")

    shown = _detail(client, alice, job)
    seen = rt.job_paths(run_dir, "").out  # where the run's output folder appears to its job
    assert shown["attempts"] == 2 and shown["resume_step"] == 20
    assert shown["resumed_from"] == f"{seen}/checkpoint-20"
    sandboxed = replace(rt, job_paths=lambda run, ref: SimpleNamespace(out=f"/forge/runs/alice/toy/{run.name}/out"))
    inside = job_reads.show(sandboxed, user=_user(rt, "alice"), ref=job)  # a sandbox shows its own paths
    assert inside["resumed_from"] == f"/forge/runs/alice/toy/{job}/out/checkpoint-20"
    assert inside["attempt_history"][1]["resumed_from"] == inside["resumed_from"]
    assert str(rt.settings.state_dir) not in json.dumps(inside)  # never the console machine's path
    assert shown["attempt_history"] == [
        {"number": 1, "started_at": 100.0, "ended_at": 160.0, "outcome": "preempted", "reason": "preempted by r-other",
         "resumed_from": None, "resume_step": None},
        {"number": 2, "started_at": 200.0, "ended_at": None, "outcome": "", "reason": "",
         "resumed_from": f"{seen}/checkpoint-20", "resume_step": 20},
    ]
    listed = client.get("/api/jobs/mine", headers=alice).json()["jobs"]
    row_view = next(r for r in listed if r["job_ref"] == job)
    assert row_view["attempts"] == 2 and set(row_view) >= ROW_FIELDS
    assert "attempt_history" not in row_view  # the list stays lean: the detail (`GET /api/job`) has the rest


def test_a_running_job_asked_to_pause_says_so(console: tuple[TestClient, Any]) -> None:
    client, rt = console
    alice = _auth(rt, "alice")
    job = _waiting_job(client, alice)
    with rt.db.write() as db:
        row = db.get(Job, job)
        assert row is not None
        set_status(db, row, "submitted")
        set_status(db, row, "running")
        attempts.begin_attempt(db, row, resume=None, now=100.0)
    paused = client.post(f"/api/jobs/{job}/pause", headers=alice)
    assert paused.json() == {"paused": True, "status": "running", "job_ref": job}
    shown = _detail(client, alice, job)
    assert shown["interrupt"]["kind"] == "pause" and shown["interrupt"]["by"] == "alice"
    assert "saving a checkpoint" in shown["message"]
    cancelled = client.post(f"/api/jobs/{job}/resume", headers=alice).json()
    assert cancelled == {"resumed": True, "status": "running", "job_ref": job}
    assert _detail(client, alice, job)["interrupt"] is None
