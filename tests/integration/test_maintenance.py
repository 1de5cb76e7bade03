"""Maintenance mode switched at run time, in process: an administrator drains the console over the API (submissions
refused with 503 and the note, queued jobs held by the scheduler, the state kept across a restart on the same state
folder) and resumes it; only administrators may, over the API and on the admin page (CSRF checked)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from starforge.console.app import create_app
from starforge.console.scheduler import Scheduler
from starforge.console.services import maintenance
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.jobs.rows import set_status
from starforge.console.settings import load_settings
from starforge.console.store.models import Job
from starforge.engines import LocalExecutor
from tests.integration.helpers import spec_for, submit
from tests.integration.test_web_pages import HTML, Console

NOTE = "upgrading the cluster, back at 14:00 UTC"


def _app(state: Path) -> FastAPI:
    return create_app(load_settings(state_dir=state, run_background=False, capacity={"cpu": 1}))


@pytest.fixture
def console(tmp_path: Path) -> Iterator[Console]:
    app = _app(tmp_path / "state")
    tokens = {}
    with app.state.runtime.db.write() as db:
        for name, role in {"root": "admin", "alice": "operator"}.items():
            tokens[name] = accounts.issue_api_token(db, accounts.create_user(db, name, role), "maintenance tests")
    yield Console(app, tokens, {})
    app.state.runtime.db.dispose()


def _job(console: Console) -> tuple[int, dict[str, object]]:
    with console.api("alice") as api:
        answer = submit(api, spec_for(api))
        return answer.status_code, answer.json()


def test_a_drained_console_refuses_submissions_until_resumed_and_keeps_its_state(console: Console,
                                                                                 tmp_path: Path) -> None:
    with console.api("root") as admin:
        assert admin.get("/api/admin/maintenance").json()["maintenance_mode"] is False
        drained = admin.post("/api/admin/maintenance/drain", json={"note": NOTE})
        assert drained.status_code == 200, drained.text
        state = drained.json()
    assert state["maintenance_mode"] is True and state["note"] == NOTE and state["by"] == "root"
    assert (state["paused"], state["failed"], state["blockers"], state["remaining_active"]) == ([], [], [], 0)
    assert state["safe_to_restart"] is True
    status, refused = _job(console)
    assert status == 503 and refused["detail"] == NOTE

    again = Console(_app(tmp_path / "state"), console.tokens, {})  # a restart on the same state folder: still in
    try:  # maintenance (each console keeps its own state in memory: the old process is gone)
        with again.api("root") as admin:
            kept = admin.get("/api/admin/maintenance").json()
            assert (kept["maintenance_mode"], kept["note"]) == (True, NOTE)
            resumed = admin.post("/api/admin/maintenance/resume")
            assert resumed.status_code == 200, resumed.text
            assert resumed.json()["resuming"] is True and resumed.json()["maintenance_mode"] is False
        status, accepted = _job(again)  # the restarted console admits again
        assert (status, accepted["status"]) == (200, "submitted"), accepted  # the only CPU is free
        with again.api("root") as admin:
            active = admin.get("/api/admin/maintenance").json()
    finally:
        again.app.state.runtime.db.dispose()
    later = _app(tmp_path / "state")  # and the next restart finds maintenance off, as the last console left it
    try:
        with TestClient(later, headers={"Authorization": f"Bearer {console.tokens['root']}"}) as admin:
            assert admin.get("/api/admin/maintenance").json()["maintenance_mode"] is False
    finally:
        later.state.runtime.db.dispose()
    assert active["blockers"] == [accepted["job_id"]] and active["remaining_active"] == 1
    assert active["safe_to_restart"] is False  # maintenance is off


def test_only_administrators_switch_maintenance_mode(console: Console) -> None:
    with console.api("alice") as api:
        for method, path in (("GET", "/api/admin/maintenance"), ("POST", "/api/admin/maintenance/drain"),
                             ("POST", "/api/admin/maintenance/resume")):
            refused = api.request(method, path)
            assert refused.status_code == 403 and refused.json()["detail"] == "administrators only", path
    with console.api("root") as admin:
        assert admin.get("/api/admin/maintenance").json()["maintenance_mode"] is False
        bad = admin.post("/api/admin/maintenance/drain", json={"note": 3})
        assert bad.status_code == 422 and bad.json()["problems"][0]["field"] == "note"


def test_the_scheduler_holds_queued_jobs_while_drained(console: Console) -> None:
    rt = console.app.state.runtime
    first = _job(console)[1]["job_id"]  # takes the only CPU
    second_answer = _job(console)[1]
    second = second_answer["job_id"]
    assert second_answer["status"] == "queued"
    with console.api("root") as admin:
        assert admin.post("/api/admin/maintenance/drain", json={"note": NOTE}).json()["blockers"] == [first]
    with rt.db.write() as db:
        job = db.get(Job, first)
        assert job is not None
        set_status(db, job, "succeeded", reason="test: ended")  # the CPU is free again
    scheduler = Scheduler(rt, LocalExecutor(rt.capacity, gpus={}))  # only its place phase runs
    assert scheduler.place() == 0
    with rt.db.read() as db:
        held = db.get(Job, second)
        assert held is not None and held.status == "queued"
        assert (held.reason, held.waiting_for) == (f"the console is in maintenance: {NOTE}", "maintenance")
    with console.api("root") as admin:
        assert admin.post("/api/admin/maintenance/resume").json()["safe_to_restart"] is False
    assert scheduler.place() == 1
    with rt.db.read() as db:
        placed = db.get(Job, second)
        assert placed is not None and placed.status == "submitted" and placed.waiting_for == ""


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the page carries no CSRF token"
    return found.group(1)


def test_the_admin_page_switches_maintenance_mode_with_csrf(console: Console) -> None:
    browser = console.browser("root")
    page = browser.get("/ui/admin")
    assert page.status_code == 200 and "Turn maintenance on" in page.text
    csrf = _csrf(page.text)
    forged = browser.post("/ui/admin/maintenance", data={"on": "true", "note": NOTE, "csrf": "0" * len(csrf)})
    assert forged.status_code == 403
    alice = console.browser("alice")
    refused = alice.post("/ui/admin/maintenance", data={"on": "true", "csrf": _csrf(alice.get("/").text)})
    assert refused.status_code == 403
    with console.api("root") as admin:
        assert admin.get("/api/admin/maintenance").json()["maintenance_mode"] is False

    done = browser.post("/ui/admin/maintenance", data={"on": "true", "note": NOTE, "csrf": csrf})
    assert done.status_code == 303 and done.headers["location"] == "/ui/admin?done=drained"
    shown = browser.get("/ui/admin").text
    assert NOTE in shown and "Turn maintenance off" in shown and "Safe to restart." in shown
    assert _job(console)[0] == 503
    off = browser.post("/ui/admin/maintenance", data={"on": "false", "csrf": csrf})
    assert off.status_code == 303 and "Turn maintenance on" in browser.get("/ui/admin").text
    status, accepted = _job(console)
    assert (status, accepted["status"]) == (200, "submitted"), accepted  # resumed: the job takes the free CPU
    assert TestClient(console.app, headers=HTML).post("/ui/admin/maintenance", data={"on": "true"}).status_code in (
        401, 403)


def test_the_configuration_is_the_state_until_an_administrator_switches_it(tmp_path: Path) -> None:
    settings = load_settings(state_dir=tmp_path / "state", maintenance=True, maintenance_note=NOTE)
    switch = maintenance.Maintenance(settings)
    assert switch.current() == maintenance.State(True, NOTE)
    assert switch.refusal() == NOTE and not (tmp_path / "state" / maintenance.FILE).exists()
