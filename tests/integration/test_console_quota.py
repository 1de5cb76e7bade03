"""Quota: impossible requests refused, busy ones queued with a reason, and no over-admission under a race."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import make_researcher
from tests.integration.conftest import BACKENDS, SQLITE, TLS, ConsoleProcess, make_console, unique
from tests.integration.helpers import admitted, spec_for, submit


@pytest.fixture(scope="module", params=SQLITE)
def quiet_console(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A console whose jobs are admitted but never launched (no background loops), with plenty of cpu slots.

    On SQLite; the race below runs on PostgreSQL too (its row lock is the point there)."""
    proc = make_console(tmp_path_factory, request.param,
                        config={"capacity": {"cpu": 1000}, "run_background": False})
    proc.start()
    yield proc
    proc.stop()


def _with_quota(console: ConsoleProcess, **quota: Any) -> tuple[str, httpx.Client]:
    name = unique("q")
    token = console.token_for(name)
    with console.client(console.admin_token) as admin:
        response = admin.post("/api/admin/quotas", json={"username": name, **quota})
        assert response.status_code == 200, response.text
    return name, console.client(token)


def test_exact_fit_is_admitted_and_over_cap_refused(quiet_console: ConsoleProcess) -> None:
    _name, api = _with_quota(quiet_console, max_concurrent_gpus=16)
    admitted(submit(api, spec_for(api, series="h200", nodes=2, gpus=8)))  # 200 started or 202 waiting, as its status says
    refused = submit(api, spec_for(api, series="h200", nodes=3, gpus=8))
    assert refused.status_code == 400
    problem = refused.json()["problems"][0]
    assert (problem["field"], problem["code"]) == ("spec.resources.pools", "quota_exceeded")
    assert "24" in problem["message"] and "16" in problem["message"]


def test_over_concurrency_is_queued_with_a_reason(quiet_console: ConsoleProcess) -> None:
    _name, api = _with_quota(quiet_console, max_concurrent_gpus=2, max_concurrent_jobs=10)
    first = submit(api, spec_for(api, gpus=2))
    assert first.status_code == 200 and first.json()["queued"] is False
    second = submit(api, spec_for(api, gpus=1))
    assert second.status_code == 202 and second.json()["queued"] is True
    assert "quota" in second.json()["message"]
    row = api.get("/api/job", params={"id": second.json()["job_id"]}).json()
    assert row["status"] == "queued" and "quota" in row["message"]


def test_profile_not_allowed_is_403(quiet_console: ConsoleProcess) -> None:
    _name, api = _with_quota(quiet_console, allowed_profiles=["cpu"])
    response = submit(api, spec_for(api, series="h200", gpus=8), profile="h200")
    assert response.status_code == 403
    assert response.json()["problems"][0]["field"] == "X-Forge-Meta.profile"


@pytest.mark.parametrize("quiet_console", BACKENDS, indirect=True)
def test_concurrent_submissions_never_over_admit(quiet_console: ConsoleProcess) -> None:
    cap = 5
    _name, api = _with_quota(quiet_console, max_concurrent_gpus=cap, max_concurrent_jobs=1000)
    spec = spec_for(api, gpus=1)
    token = api.headers["Authorization"]
    racers = 40  # one connection each: 40 submissions in flight at once
    limits = httpx.Limits(max_connections=racers, max_keepalive_connections=racers)
    with httpx.Client(base_url=quiet_console.url, headers={"Authorization": token}, timeout=120, limits=limits,
                      verify=TLS) as client, ThreadPoolExecutor(max_workers=racers) as pool:
        responses = list(pool.map(lambda _: submit(client, spec), range(200)))
    assert len({admitted(r) for r in responses}) == 200  # every one admitted, each with the code its status tells
    started = [r for r in responses if r.json()["queued"] is False]
    assert len(started) == cap
    rows = api.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"]
    assert sum(1 for r in rows if r["status"] == "submitted") == cap
    assert sum(1 for r in rows if r["status"] == "queued") == 200 - cap


@pytest.mark.parametrize("quiet_console", BACKENDS, indirect=True)
def test_concurrent_submissions_never_overspend_the_daily_budget(quiet_console: ConsoleProcess) -> None:
    # 1 GPU hour a day, each 1-GPU job reserves its 0.25 h wall-time limit: exactly 4 fit, whatever the interleaving
    _name, api = _with_quota(quiet_console, daily_gpu_hours=1, max_job_hours=0.25, max_concurrent_gpus=1000,
                             max_concurrent_jobs=1000)
    spec = spec_for(api, gpus=1)
    token = api.headers["Authorization"]
    racers = 40
    limits = httpx.Limits(max_connections=racers, max_keepalive_connections=racers)
    with httpx.Client(base_url=quiet_console.url, headers={"Authorization": token}, timeout=120, limits=limits,
                      verify=TLS) as client, ThreadPoolExecutor(max_workers=racers) as pool:
        responses = list(pool.map(lambda _: submit(client, spec), range(120)))
    accepted = [admitted(r) for r in responses if r.status_code in (200, 202)]
    refused = [r for r in responses if r.status_code == 400]
    assert (len(set(accepted)), len(refused)) == (4, 116), {r.status_code for r in responses}
    assert {(p["field"], p["code"]) for r in refused for p in r.json()["problems"]} == {("quota", "quota_exhausted")}
    assert len(api.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"]) == 4
    decisions = api.get("/api/admissions/mine", params={"limit": 500}).json()
    verdicts = [d["verdict"] for d in decisions.get("admissions", decisions.get("decisions", []))]
    assert verdicts.count("rejected") == 116  # every refusal audited, at admission or at the commit


def test_the_cli_shows_quota_and_profile_refusals_at_their_fields(quiet_console: ConsoleProcess,
                                                                  tmp_path: Path) -> None:
    """A quota (400) and a profile the account may not use (403) print each field with its hint, and `--json`
    carries the console's `problems`."""
    me = make_researcher(quiet_console, tmp_path)
    with quiet_console.client(quiet_console.admin_token) as admin:
        answer = admin.post("/api/admin/quotas", json={"username": me.user, "max_concurrent_gpus": 2,
                                                       "allowed_profiles": ["cpu"]})
        assert answer.status_code == 200, answer.text
    assert me.sf("new", "toy", "--method", "tinyrl/grpo").returncode == 0
    me.commit("an experiment")

    over = me.sf("submit", "toy", "--profile", "cpu:4")
    assert over.returncode == 1 and "spec.resources.pools: the job asks for 4 GPUs" in over.stderr, over.stderr
    assert "hint: use a smaller --profile" in over.stderr
    profile = me.sf("submit", "toy", "--profile", "h200:8")
    assert profile.returncode == 1 and "error:" not in profile.stderr, profile.stderr
    assert "X-Forge-Meta.profile: your account may not use profile 'h200'" in profile.stderr
    assert "hint: allowed for you: cpu" in profile.stderr
    as_json = me.sf("submit", "toy", "--profile", "h200:8", "--json")
    assert as_json.returncode == 1
    refusal = json.loads(as_json.stdout)
    assert refusal["ok"] is False and refusal["title"]
    fields = {(p["field"], p["code"]): p["hint"] for p in refusal["problems"]}
    assert fields[("X-Forge-Meta.profile", "profile_not_allowed")] == "allowed for you: cpu"
    assert ("spec.resources.pools", "quota_exceeded") in fields
