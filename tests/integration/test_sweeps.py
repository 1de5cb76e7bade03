"""Sweeps on an in-process console (the real app over ASGI, no background loops; SQLite and PostgreSQL): one
admission decision for every point, all jobs in one transaction, `max_parallel` in the scheduler's place phase,
quota queueing the rest, foreign sweeps as 404, the official client's meta `sweep_id` (per account), ranking by a
metric."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from starforge.client import Console, NotFound, Rejected
from starforge.console.services.context import Runtime
from tests.conftest import require_service
from tests.integration.conftest import BACKENDS, _postgres_database
from tests.integration.helpers import admitted, bundle, spec_for, submit
from tests.security.archives import Member, tar_gz


@pytest.fixture(scope="module", params=BACKENDS)
def app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient,
                                                                                                  Runtime, str]]:
    """The console app on a fresh store of each backend, its runtime and its administrator token."""
    from starforge.console.app import bootstrap_admin, build_console, create_app
    from starforge.console.settings import Settings

    database_url = ""
    if request.param == "postgres":
        database_url = _postgres_database(require_service("PostgreSQL", "STARFORGE_TEST_POSTGRES_URL",
                                                          "run `scripts/services.sh up`"))
    state = Path(tmp_path_factory.mktemp("sweeps")) / "state"
    settings = Settings(state_dir=state, capacity={"cpu": 8}, run_background=False, database_url=database_url)
    built = build_console(settings)
    runtime = built.runtime
    admin_token = bootstrap_admin(runtime)
    with TestClient(create_app(settings, built)) as client:
        yield client, runtime, admin_token
    runtime.db.dispose()


def _user(app: tuple[TestClient, Runtime, str], **quota: float) -> httpx.Client:
    client, _rt, admin = app
    name = f"s{uuid.uuid4().hex[:8]}"
    created = client.post("/api/admin/users", json={"username": name}, headers={"Authorization": f"Bearer {admin}"})
    assert created.status_code == 200, created.text
    if quota:
        set_quota = client.post("/api/admin/quotas", json={"username": name, **quota},
                                headers={"Authorization": f"Bearer {admin}"})
        assert set_quota.status_code == 200, set_quota.text
    user = TestClient(client.app)
    user.headers["Authorization"] = f"Bearer {created.json()['token']}"
    return user


def _set_quota(app: tuple[TestClient, Runtime, str], user: httpx.Client, **quota: float) -> None:
    client, _rt, admin = app
    name = user.get("/api/whoami").json()["username"]
    changed = client.post("/api/admin/quotas", json={"username": name, **quota},
                          headers={"Authorization": f"Bearer {admin}"})
    assert changed.status_code == 200, changed.text


class _Through(httpx.BaseTransport):
    """The SDK's requests, answered by the in-process app (its TestClient), so the SDK's own encoding is tested."""

    def __init__(self, client: TestClient) -> None:
        self._client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self._client.request(request.method, str(request.url), content=request.read(),
                                      headers=dict(request.headers))
        return httpx.Response(answer.status_code, headers={"Content-Type": answer.headers.get("content-type", "")},
                              content=answer.content)


def _points(api: httpx.Client, values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    base = spec_for(api, hyperparams={"max_num_steps": 2})
    points = []
    for params in values:
        spec = copy.deepcopy(base)
        spec["spec"]["hyperparams"].update(params)
        points.append({"params": {k: str(v) for k, v in params.items()}, "spec": spec})
    return points


def _post_sweep(api: httpx.Client, points: list[dict[str, Any]], max_parallel: int = 0,
                data: bytes | None = None) -> httpx.Response:
    doc = {"exp": "experiments/toy", "profile": "cpu", "git_commit": "3f2a9c1", "git_dirty": False,
           "config_sha": "none", "max_parallel": max_parallel, "points": points}
    return api.post("/api/sweeps", files={"sweep": ("sweep.json", json.dumps(doc), "application/json"),
                                          "bundle": ("bundle.tar.gz", data or bundle(), "application/gzip")})


def _statuses(rt: Runtime, sweep_id: str) -> dict[str, str]:
    from starforge.console.store.models import Job

    with rt.db.read() as db:
        return dict(db.execute(select(Job.id, Job.status).where(Job.sweep_id == sweep_id)).all())


def _count(rt: Runtime, model: Any, user: str) -> int:
    with rt.db.read() as db:
        column = model.username if hasattr(model, "username") else model.user_id
        return int(db.scalar(select(func.count()).select_from(model).where(column == user)) or 0)


def test_an_invalid_point_refuses_the_whole_sweep_and_stores_nothing(app: tuple[TestClient, Runtime, str]) -> None:
    _client, rt, _admin = app
    api = _user(app)
    me = api.get("/api/whoami").json()["username"]
    bundles = sorted((rt.settings.state_dir / "bundles").rglob("*.tar.gz"))
    points = _points(api, [{"learning_rate": 0.1}, {"learning_rate": -1.0}, {"learning_rate": 0.2, "seed": "x"}])
    response = _post_sweep(api, points)
    assert response.status_code == 422, response.text
    body = response.json()
    fields = [p["field"] for p in body["problems"]]
    assert "points[1].spec.hyperparams.learning_rate" in fields
    assert any(f.startswith("points[2].spec.hyperparams.seed") for f in fields), fields
    assert not any(f.startswith("points[0]") for f in fields)
    assert "learning_rate=-1.0" in body["detail"] and "2 of 3 points" in body["detail"]
    from starforge.console.store.models import Job, Sweep

    assert _count(rt, Job, me) == 0
    with rt.db.read() as db:
        assert db.scalar(select(func.count()).select_from(Sweep)) == _sweeps_before_any_valid(db)
    assert sorted((rt.settings.state_dir / "bundles").rglob("*.tar.gz")) == bundles  # the bundle was not kept
    decisions = api.get("/api/admissions/mine").json()
    assert [d["verdict"] for d in decisions.get("admissions", decisions.get("decisions", []))] == ["rejected"] * 2


def test_a_hostile_bundle_refuses_the_sweep_once_at_bundle(app: tuple[TestClient, Runtime, str]) -> None:
    _client, rt, _admin = app
    api = _user(app)
    me = api.get("/api/whoami").json()["username"]
    hostile = tar_gz([Member("../escape.txt", b"out")])
    response = _post_sweep(api, _points(api, [{"learning_rate": 0.1}, {"learning_rate": 0.2}]), data=hostile)
    assert response.status_code == 422, response.text
    problems = response.json()["problems"]
    assert problems and all(p["field"].startswith("bundle") for p in problems), problems  # no point's own problem
    assert len({(p["field"], p["code"]) for p in problems}) == len(problems)  # inspected once, not once per point
    from starforge.console.store.models import Job

    assert _count(rt, Job, me) == 0


def _sweeps_before_any_valid(db: Any) -> int:
    from starforge.console.store.models import Sweep

    return int(db.scalar(select(func.count()).select_from(Sweep).where(Sweep.points_json.like("%-1.0%"))) or 0)


def test_max_parallel_holds_back_the_rest_until_a_run_ends(app: tuple[TestClient, Runtime, str]) -> None:
    from starforge.console.scheduler import Scheduler
    from starforge.console.services.jobs.rows import ACTIVE, set_status
    from starforge.console.store.models import Job
    from starforge.engines import LocalExecutor

    _client, rt, _admin = app
    api = _user(app)
    response = _post_sweep(api, _points(api, [{"seed": s} for s in (1, 2, 3, 4)]), max_parallel=2)
    assert response.status_code == 200, response.text
    answer = response.json()
    sweep_id = answer["sweep_id"]
    assert sweep_id.startswith("sweep-toy-")
    assert [j["params"] for j in answer["jobs"]] == [{"seed": str(s)} for s in (1, 2, 3, 4)]
    assert [j["status"] for j in answer["jobs"]] == ["submitted", "submitted", "queued", "queued"]
    assert all("runs at most 2 at a time" in j["message"] for j in answer["jobs"][2:])
    listed = api.get("/api/jobs/mine", params={"sweep": sweep_id}).json()["jobs"]
    assert sorted(j["job_ref"] for j in listed) == sorted(j["job_id"] for j in answer["jobs"])
    assert {j["sweep_id"] for j in listed} == {sweep_id}
    scheduler = Scheduler(rt, LocalExecutor(rt.capacity, gpus={}))  # only its place phase runs
    first, second = answer["jobs"][0]["job_id"], answer["jobs"][1]["job_id"]
    assert scheduler.place() == 0  # nothing ended: the limit holds on a cycle of its own too
    with rt.db.write() as db:
        job = db.get(Job, first)
        assert job is not None
        set_status(db, job, "succeeded", reason="test: ended")
    assert scheduler.place() == 1
    statuses = _statuses(rt, sweep_id)
    assert sum(1 for s in statuses.values() if s in ACTIVE) == 2
    assert statuses[first] == "succeeded" and statuses[second] == "submitted"
    waiting = [j for j, s in statuses.items() if s == "queued"]
    assert len(waiting) == 1
    with rt.db.read() as db:
        row = db.get(Job, waiting[0])
        assert row is not None and row.waiting_for == "sweep"
    stopped = api.post(f"/api/sweeps/{sweep_id}/stop").json()
    assert stopped == {"sweep_id": sweep_id, "stopped": 3, "failed": []}


def test_quota_queues_the_rest_of_a_sweep(app: tuple[TestClient, Runtime, str]) -> None:
    _client, rt, _admin = app
    api = _user(app, max_concurrent_jobs=1)
    response = _post_sweep(api, _points(api, [{"seed": s} for s in (1, 2, 3)]))
    assert response.status_code == 200, response.text
    jobs = response.json()["jobs"]
    assert [j["status"] for j in jobs] == ["submitted", "queued", "queued"]
    assert all(j["queued"] and j["message"].startswith("quota:") for j in jobs[1:])


def test_a_foreign_sweep_is_404_for_show_stop_and_ls(app: tuple[TestClient, Runtime, str]) -> None:
    owner, other = _user(app), _user(app)
    sweep_id = _post_sweep(owner, _points(owner, [{"seed": 1}])).json()["sweep_id"]
    assert owner.get(f"/api/sweeps/{sweep_id}").status_code == 200
    for response in (other.get(f"/api/sweeps/{sweep_id}"), other.post(f"/api/sweeps/{sweep_id}/stop"),
                     other.get("/api/jobs/mine", params={"sweep": sweep_id}),
                     other.get("/api/sweeps/sweep-unknown-20260101-000000")):
        assert response.status_code == 404, response.text
        assert "no sweep" in response.json()["detail"]
    assert [s["sweep_id"] for s in other.get("/api/sweeps").json()["sweeps"]] == []
    assert [s["sweep_id"] for s in owner.get("/api/sweeps").json()["sweeps"]] == [sweep_id]


def test_the_official_clients_meta_sweep_ids_are_per_account(app: tuple[TestClient, Runtime, str]) -> None:
    owner, other = _user(app), _user(app)
    sweep_id = f"sweep-toy-{uuid.uuid4().hex[:8]}"
    spec = spec_for(owner, hyperparams={"max_num_steps": 2})
    for lr in ("0.05", "0.1"):
        variant = copy.deepcopy(spec)
        variant["spec"]["hyperparams"]["learning_rate"] = float(lr)
        sent = submit(owner, variant, extra_meta={"sweep_id": sweep_id, "sweep_params": {"learning_rate": lr}})
        admitted(sent)  # submitted, or queued behind the earlier tests' jobs on the shared console
    listed = owner.get("/api/jobs/mine", params={"sweep": sweep_id}).json()["jobs"]
    assert len(listed) == 2
    shown = owner.get(f"/api/sweeps/{sweep_id}").json()
    assert sorted(r["params"]["learning_rate"] for r in shown["runs"]) == [0.05, 0.1]  # typed from the spec
    # the same client-chosen id from another account is that account's own sweep: no refusal, nothing learnt
    theirs = submit(other, spec, extra_meta={"sweep_id": sweep_id, "sweep_params": {"learning_rate": "1"}})
    admitted(theirs)
    assert "another account" not in theirs.text
    assert [r["job_id"] for r in other.get(f"/api/sweeps/{sweep_id}").json()["runs"]] == [theirs.json()["job_id"]]
    assert [s["jobs"] for s in other.get("/api/sweeps").json()["sweeps"]] == [1]
    assert len(other.get("/api/jobs/mine", params={"sweep": sweep_id}).json()["jobs"]) == 1
    assert other.post(f"/api/sweeps/{sweep_id}/stop").json()["stopped"] == 1  # its own run only
    assert len(owner.get(f"/api/sweeps/{sweep_id}").json()["runs"]) == 2
    assert {j["status"] for j in owner.get("/api/jobs/mine", params={"sweep": sweep_id}).json()["jobs"]} != {
        "stopped"}
    assert [s["jobs"] for s in owner.get("/api/sweeps").json()["sweeps"]] == [2]
    bad = submit(owner, spec, extra_meta={"sweep_id": "../etc"})
    assert bad.status_code == 400 and bad.json()["problems"][0]["field"] == "X-Forge-Meta.sweep_id"


def test_show_ranks_runs_by_the_recipe_metric_and_marks_the_best(app: tuple[TestClient, Runtime, str]) -> None:
    from starforge.console.services.jobs.metrics import record_points

    client, rt, _admin = app
    api = _user(app)
    token = api.headers["Authorization"].split(" ", 1)[1]
    sdk = Console("http://testserver", token, transport=_Through(client))
    points = _points(api, [{"learning_rate": lr} for lr in (0.05, 0.1, 0.2)])
    answer = sdk.submit_sweep(points, bundle(), exp="experiments/toy", profile="cpu",
                              meta_extra={"git_commit": "3f2a9c1", "config_sha": "none"})
    jobs = [j["job_id"] for j in answer["jobs"]]
    with rt.db.write() as db:
        for job_id, (reward, loss) in zip(jobs, ((0.5, 0.3), (0.9, 0.4), (0.7, 0.1)), strict=True):
            record_points(db, job_id, [{"key": "train/reward", "value": 0.1, "step": 1},
                                       {"key": "train/reward", "value": reward, "step": 2},
                                       {"key": "train/loss", "value": loss, "step": 2}])
    shown = sdk.sweep(answer["sweep_id"])
    assert (shown["metric"], shown["direction"], shown["best"]) == ("train/reward", "higher", jobs[1])
    assert [r["job_id"] for r in shown["runs"]] == [jobs[1], jobs[2], jobs[0]]
    assert [r["best"] for r in shown["runs"]] == [True, False, False]
    assert shown["runs"][0]["metrics"] == {"train/reward": 0.9, "train/loss": 0.4}  # final values
    by_loss = sdk.sweep(answer["sweep_id"], "train/loss")
    assert (by_loss["direction"], by_loss["best"]) == ("lower", jobs[2])
    assert sdk.sweep(answer["sweep_id"], "reward")["metric"] == "train/reward"  # a declared alias
    with pytest.raises(Rejected) as unknown:
        sdk.sweep(answer["sweep_id"], "nope")
    assert unknown.value.problems[0].field == "metric"
    assert [j.ref for j in sdk.jobs(sweep=answer["sweep_id"])] == list(reversed(jobs))
    with pytest.raises(NotFound):
        sdk.jobs(sweep="sweep-nobody-20260101-000000")
    with pytest.raises(Rejected) as refused:
        sdk.submit_sweep(_points(api, [{"learning_rate": 100.0}]), bundle(), exp="experiments/toy", profile="cpu")
    assert refused.value.problems[0].field == "points[0].spec.hyperparams.learning_rate"


def test_a_sweep_fits_the_daily_budget_with_every_point_before_it_counted(
        app: tuple[TestClient, Runtime, str]) -> None:
    from starforge.console.store.models import Job

    _client, rt, _admin = app
    api = _user(app, daily_gpu_hours=1, max_job_hours=0.3)  # each 1-GPU point reserves 0.3 of 1 GPU hour
    me = api.get("/api/whoami").json()["username"]
    refused = _post_sweep(api, _points(api, [{"seed": s} for s in range(6)]))
    assert refused.status_code == 422, refused.text
    problems = refused.json()["problems"]
    assert [(p["field"], p["code"]) for p in problems] == [(f"points[{i}].quota", "quota_exhausted") for i in (3, 4, 5)]
    assert problems[0]["data"] == {"used": 0.0, "limit": 1.0, "reserved": 0.9, "needed": 0.3}
    assert "reserves 0.3 GPU hours" in problems[0]["message"] and "daily budget of 1 GPU hours" in problems[0]["message"]
    assert "00:00 UTC" in problems[0]["hint"]
    assert _count(rt, Job, me) == 0  # refused whole: nothing stored
    admitted = _post_sweep(api, _points(api, [{"seed": s} for s in range(3)]))
    assert admitted.status_code == 200, admitted.text
    spec = spec_for(api, hyperparams={"max_num_steps": 2})
    for extra in ({}, {"sweep_id": "sweep-toy-20260101-000000", "sweep_params": {"seed": "9"}}):  # the official sweep
        one_more = submit(api, spec, extra_meta=extra)  # the queued and running points count against it
        assert one_more.status_code == 400, one_more.text
        problem = one_more.json()["problems"][0]
        assert (problem["field"], problem["code"], problem["data"]["reserved"]) == ("quota", "quota_exhausted", 0.9)
    assert _count(rt, Job, me) == 3


def test_placement_checks_the_budget_again_and_a_new_day_renews_it(app: tuple[TestClient, Runtime, str]) -> None:
    from starforge.console.scheduler import Scheduler
    from starforge.console.services.jobs.rows import set_status
    from starforge.console.services.quota.caps import day_start
    from starforge.console.store.models import Job
    from starforge.engines import LocalExecutor

    _client, rt, _admin = app
    with rt.db.write() as db:  # the earlier tests' jobs hold the slots: end them, so only the budget is in the way
        for job in db.scalars(select(Job).where(Job.status.in_(("submitted", "queued")))):
            set_status(db, job, "stopped", reason="test: cleared")
    api = _user(app, daily_gpu_hours=1, max_job_hours=0.5, max_concurrent_jobs=1)
    spec = spec_for(api, hyperparams={"max_num_steps": 2})
    first, second = (submit(api, spec).json() for _ in range(2))
    assert (first["status"], second["status"]) == ("submitted", "queued")  # 0.5 + 0.5 of 1 GPU hour: both admitted
    _set_quota(app, api, daily_gpu_hours=0.9, max_concurrent_jobs=2)  # the job cap is lifted, the budget lowered
    scheduler = Scheduler(rt, LocalExecutor(rt.capacity, gpus={}))  # only its place phase runs
    assert scheduler.place() == 0
    with rt.db.read() as db:
        row = db.get(Job, second["job_id"])
        assert row is not None and (row.status, row.waiting_for) == ("queued", "budget")
    shown = api.get("/api/job", params={"id": second["job_id"]}).json()
    assert shown["status"] == "queued" and "daily budget of 0.9 GPU hours" in shown["message"], shown
    with rt.db.write() as db:  # the first run ends, every one of its hours in the previous UTC day
        job = db.get(Job, first["job_id"])
        assert job is not None
        set_status(db, job, "succeeded", reason="test: ended")
        today = day_start(job.finished_at or 0.0)
        job.started_at, job.finished_at = today - 1800, today - 1
    assert scheduler.place() == 1
    with rt.db.read() as db:
        row = db.get(Job, second["job_id"])
        assert row is not None and row.status == "submitted"
