"""Export/eval on request (`POST /api/jobs/{ref}/followups`, `POST /api/post`) and `POST /api/clean`: the refusals
and the confinement of cleaning.

An in-process console (the real app over its ASGI interface, SQLite, no background loops): jobs are admitted over
the API, then moved to their final status, given a run folder and a registered checkpoint by hand, as the scheduler
and the run would.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from starforge.console.app import bootstrap_admin, build_console, create_app
from starforge.console.scheduler import run_dir_of
from starforge.console.services.registries import artifacts
from starforge.console.settings import Settings
from starforge.console.store.models import Job
from tests.integration.helpers import admitted, bundle, spec_for, submit


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Any, str]]:
    state = Path(tmp_path_factory.mktemp("followups")) / "state"
    settings = Settings(state_dir=state, capacity={"cpu": 2}, run_background=False)
    built = build_console(settings)
    rt = built.runtime
    admin = bootstrap_admin(rt)
    with TestClient(create_app(settings, built)) as client:
        client.headers["Authorization"] = f"Bearer {admin}"
        yield client, rt, str(admin)


def _user(console: tuple[TestClient, Any, str]) -> dict[str, str]:
    client, _rt, admin = console
    made = client.post("/api/admin/users", json={"username": f"u{uuid.uuid4().hex[:8]}"},
                       headers={"Authorization": f"Bearer {admin}"})
    assert made.status_code == 200, made.text
    return {"Authorization": f"Bearer {made.json()['token']}"}


def _job(console: tuple[TestClient, Any, str], auth: dict[str, str], status: str = "succeeded", *,
         exp: str = "experiments/toy", recipe: str = "tinyrl/grpo", checkpoint: bool = True) -> tuple[str, Path]:
    """Admit a job as `auth`, then finish it by hand: its run folder, a checkpoint in it, its final status."""
    client, rt, _admin = console
    client.headers.update(auth)
    spec = spec_for(client, recipe, exp=exp)
    answer = submit(client, spec, data=bundle({f"{exp}/config.yaml": "grpo:\n  max_num_steps: 2\n"}))
    job_id = admitted(answer)  # submitted, or queued behind the follow-ups earlier tests left waiting
    with rt.db.write() as db:
        job = db.get(Job, job_id)
        run_dir = run_dir_of(rt.settings.state_dir, job.username, exp, job_id)
        step = run_dir / "out" / "checkpoints" / "step_2"
        step.mkdir(parents=True)
        (step / "policy.npz").write_bytes(b"x" * 100)
        (run_dir / "logs").mkdir()
        (run_dir / "logs" / "output.log").write_text("step 1\nstep 2\n")
        if checkpoint:
            artifacts.register(db, job_id, "checkpoint", str(step), step=2, size_bytes=100)
        job.status, job.run_dir = status, str(run_dir)
    return job_id, run_dir


def _followup(client: TestClient, auth: dict[str, str], ref: str, **body: Any) -> Any:
    return client.post(f"/api/jobs/{ref}/followups", json=body, headers=auth)


def test_export_on_request_queues_a_child_like_then(console: tuple[TestClient, Any, str]) -> None:
    client, rt, _ = console
    alice = _user(console)
    parent, run_dir = _job(console, alice)
    made = _followup(client, alice, parent, action="export")
    assert made.status_code == 202, made.text
    body = made.json()
    assert {"job_id", "run_id", "queued", "message", "requested_gpus", "dry_run", "warnings"} <= set(body)
    assert body["parent"] == parent and body["queued"] is True and body["dry_run"] is False
    assert body["checkpoint"] == str(run_dir / "out" / "checkpoints" / "step_2")
    with rt.db.read() as db:
        child = db.get(Job, body["job_id"])
        assert (child.parent_id, child.action, child.status) == (parent, "export", "queued")
        assert json.loads(child.resolved_json)["init_from"] == body["checkpoint"]
        pools = json.loads(child.spec_json)["spec"]["resources"]["pools"]
        assert [p["name"] for p in pools] == ["lifecycle"]
    row = client.get("/api/job", params={"id": body["job_id"]}, headers=alice).json()
    assert row["parent"] == parent and row["action"] == "export"


def test_refusals_foreign_unfinished_no_checkpoint_unknown_action(console: tuple[TestClient, Any, str]) -> None:
    client, _rt, _ = console
    alice, bob = _user(console), _user(console)
    done, _ = _job(console, alice)
    foreign = _followup(client, bob, done, action="export")
    assert foreign.status_code == 404, foreign.text
    assert _followup(client, alice, "r-doesnotexist", action="export").status_code == 404

    running, _ = _job(console, alice, "running")
    busy = _followup(client, alice, running, action="export")
    assert busy.status_code == 409, busy.text
    assert "running" in busy.json()["detail"]
    assert f"sf job status {running}" in busy.json()["problems"][0]["hint"]

    bare, _ = _job(console, alice, checkpoint=False)
    empty = _followup(client, alice, bare, action="export")
    assert empty.status_code == 409 and empty.json()["problems"][0]["code"] == "followup_no_checkpoint", empty.text

    unknown = _followup(client, alice, done, action="eval")
    assert unknown.status_code == 422, unknown.text
    problem = unknown.json()["problems"][0]
    assert problem["field"] == "action" and problem["data"]["allowed"] == ["export"]
    assert "export" in problem["message"]

    bad = _followup(client, alice, done, action="export", benchmarks=["gsm8k", "../x"])
    assert bad.status_code == 422
    assert {p["field"] for p in bad.json()["problems"]} == {"benchmarks", "benchmarks[1]"}


def test_api_post_follows_the_newest_succeeded_run_with_that_checkpoint(console: tuple[TestClient, Any, str]) -> None:
    client, rt, _ = console
    alice = _user(console)
    older, older_dir = _job(console, alice, exp="experiments/post")
    _newer, _ = _job(console, alice, exp="experiments/post")
    spec = spec_for(client, exp="experiments/post")
    meta = {"action": "export", "exp": "experiments/post", "profile": "cpu",
            "flags": ["--checkpoint", f"{older}/out/checkpoints/step_2", "--checkpoint-format", "npz"],
            "spec": spec, "git_commit": "3f2a9c1", "git_dirty": False, "config_sha": "none"}
    wanted = str(older_dir / "out" / "checkpoints" / "step_2")
    meta["flags"][1] = wanted
    posted = client.post("/api/post", content=bundle(), headers={
        **alice, "Content-Type": "application/gzip", "X-Forge-Meta": json.dumps(meta)})
    assert posted.status_code == 202, posted.text
    assert posted.json()["parent"] == older and posted.json()["checkpoint"] == wanted
    with rt.db.read() as db:
        assert json.loads(db.get(Job, posted.json()["job_id"]).meta_json)["flags"][1] == wanted

    meta["flags"][1] = "/nowhere/step_9"
    missing = client.post("/api/post", content=bundle(), headers={
        **alice, "Content-Type": "application/gzip", "X-Forge-Meta": json.dumps(meta)})
    assert missing.status_code == 409 and missing.json()["problems"][0]["code"] == "followup_no_checkpoint"
    meta["exp"] = meta["spec"]["spec"]["source"]["exp"] = "experiments/never"
    unknown = client.post("/api/post", content=bundle(), headers={
        **alice, "Content-Type": "application/gzip", "X-Forge-Meta": json.dumps(meta)})
    assert unknown.status_code == 404, unknown.text


def test_clean_skips_active_jobs_and_stays_inside_the_run_folder(console: tuple[TestClient, Any, str],
                                                                 tmp_path: Path) -> None:
    client, rt, _ = console
    alice = _user(console)
    done, done_dir = _job(console, alice, exp="experiments/cl")
    active, active_dir = _job(console, alice, "running", exp="experiments/cl")
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the run's")
    (done_dir / "out" / "escape").symlink_to(outside)  # a link a hostile job planted: removed, never followed
    (done_dir / "out" / "escape-file").symlink_to(outside / "keep.txt")

    cleaned = client.post("/api/clean", params={"exp": "experiments/cl"}, headers=alice)
    assert cleaned.status_code == 200, cleaned.text
    body = cleaned.json()
    assert "job_id" in body and body["cleaned"] == [done]
    assert body["skipped"] == [{"job_ref": active, "status": "running", "reason": "still active"}]
    assert body["files"] == 4 and body["bytes"] >= 114  # policy.npz, output.log and the two links themselves
    assert not done_dir.exists() and (active_dir / "out" / "checkpoints").is_dir()
    assert (outside / "keep.txt").read_text() == "not the run's"
    assert client.get(f"/api/jobs/{done}/artifacts", headers=alice).json()["artifacts"] == []
    assert client.get(f"/api/jobs/{active}/artifacts", headers=alice).json()["artifacts"]
    with rt.db.read() as db:
        assert "cleaned_at" in json.loads(db.get(Job, done).meta_json)
        assert db.scalar(select(Job.status).where(Job.id == done)) == "succeeded"  # the row stays, as history
    again = _followup(client, alice, done, action="export")
    assert again.status_code == 409 and again.json()["problems"][0]["code"] == "followup_no_checkpoint"

    assert client.post("/api/clean", params={"exp": "cl"}, headers=_user(console)).status_code == 404
    assert client.post("/api/clean", params={"exp": ""}, headers=alice).status_code == 422
