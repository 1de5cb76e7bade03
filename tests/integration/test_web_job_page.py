"""The web console's job page shows the job's own admission decision, its attempts (a table, and a mark on its charts
where each later attempt resumed) and its pause, resume and retry buttons; its jobs page lists 1,000 jobs.

In process: the console application on SQLite in a temporary state directory, without background loops, driven by
Starlette's test client as a browser would (a session cookie, `Accept: text/html`).
"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from starforge.console.app import create_app
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.jobs import attempts
from starforge.console.services.jobs.followups import create_followups
from starforge.console.services.jobs.metrics import record_points
from starforge.console.services.jobs.rows import set_status
from starforge.console.services.quota import caps as quota
from starforge.console.settings import load_settings
from starforge.console.store.models import Job
from starforge.console.web.charts import Mark, attempt_marks, line_chart
from tests.integration.helpers import admitted, spec_for, submit
from tests.integration.test_web_pages import Console

MANY = 1000


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    state = Path(tmp_path_factory.mktemp("web-job-page")) / "state"
    app = create_app(load_settings(state_dir=state, run_background=False, capacity={"cpu": 2}))
    tokens = {}
    with app.state.runtime.db.write() as db:
        for name in ("alice", "bob", "many"):
            tokens[name] = accounts.issue_api_token(db, accounts.create_user(db, name, "operator"), "web tests")
    yield Console(app, tokens, {})
    app.state.runtime.db.dispose()


def _section(page: str, heading: str) -> str:
    found = re.search(rf'<h2 id="{heading}">.*?</section>', page, re.S)
    assert found, f"the page has no {heading} section"
    return html.unescape(found.group(0))


def test_the_job_page_shows_the_admission_decision_with_its_warnings(console: Console) -> None:
    with console.api("alice") as api:
        spec = spec_for(api, exp="experiments/warned")
        spec["metadata"]["owner"] = "mallory"  # ignored, with a warning naming the field
        answer = submit(api, spec)
        job = admitted(answer, "submitted")
        [decision] = [d for d in api.get("/api/admissions/mine").json()["admissions"] if d["job_id"] == job]
    page = console.browser("alice").get(f"/ui/jobs/{job}")
    assert page.status_code == 200
    admission = _section(page.text, "h-admission")
    assert f">{decision['verdict']}</span>" in admission and "submission" in admission
    [warning] = decision["warnings"]
    assert "Warning: <code>metadata.owner</code>" in admission and warning["message"] in admission
    assert "'mallory' was ignored" in admission
    assert "No admission decision" not in admission and 'class="problems"' not in admission  # no problems


def test_a_refused_follow_up_shows_its_problems_with_field_and_hint(console: Console) -> None:
    with console.api("bob") as api:
        answer = submit(api, spec_for(api, exp="experiments/refused", lifecycle={"on_success": ["export"]}))
        parent = admitted(answer, "submitted")  # 2 CPU slots: alice's job and this one
    rt = console.app.state.runtime
    with rt.db.write() as db:
        quota.set_quota(db, accounts.get_user(db, "bob"), {"allowed_profiles": ["h200"]},
                        rt.settings.quota)  # the export step may not run on the parent's profile any more
        job = db.get(Job, parent)
        assert job is not None
        for status in ("running", "succeeded"):
            set_status(db, job, status)
        [child] = create_followups(db, parent=job, catalog=rt.catalog, settings=rt.settings)  # the scheduler's call
    with console.api("bob") as api:
        [decision] = [d for d in api.get("/api/admissions/mine").json()["admissions"] if d["job_id"] == child]
    assert decision["verdict"] == "rejected" and decision["source"] == "followup"
    page = console.browser("bob").get(f"/ui/jobs/{child}")
    assert page.status_code == 200
    admission = _section(page.text, "h-admission")
    assert ">rejected</span>" in admission and "follow-up check" in admission
    for problem in decision["problems"]:
        assert f"<code>{problem['field']}</code>" in admission and problem["message"] in admission
        assert f"Hint: {problem['hint']}" in admission
    assert [p["code"] for p in decision["problems"]] == ["profile_not_allowed"]
    # the parent's page shows its own accepted decision, not its child's refusal
    parent_admission = _section(console.browser("bob").get(f"/ui/jobs/{parent}").text, "h-admission")
    assert "profile_not_allowed" not in parent_admission and ">rejected<" not in parent_admission
    # another account's job stays a 404, its decision with it
    assert console.browser("alice").get(f"/ui/jobs/{child}").status_code == 404


def _fill(console: Console) -> list[str]:
    """Write MANY jobs of `many` straight into the store (the page, not the submission path, is tested)."""
    now = time.time()
    statuses = ("succeeded", "failed", "running", "pending")
    with console.app.state.runtime.db.write() as db:
        user_id = accounts.get_user(db, "many").id
        for i in range(MANY):
            status = statuses[i % len(statuses)]
            db.add(Job(id=f"r-many{i:05d}", user_id=user_id, username="many", name=f"run-{i}",
                       exp=f"experiments/sweep-{i % 7}", profile="cpu", recipe="tinyrl/grpo", status=status,
                       reason=f"why <{i}>", requested_gpus=1 + i % 3, spec_json=json.dumps({"spec": {}}),
                       submitted_at=now - i * 60))
    return [f"r-many{i:05d}" for i in range(MANY)]  # newest first


def test_the_jobs_page_lists_a_thousand_jobs_as_the_api_does(console: Console) -> None:
    refs = _fill(console)
    page = console.browser("many").get("/", params={"limit": MANY})
    assert page.status_code == 200
    rows = re.findall(r'<tr data-job="([^"]+)">(.*?)</tr>', page.text, re.S)
    assert [ref for ref, _row in rows] == refs  # every job, newest first
    with console.api("many") as api:
        listed = api.get("/api/jobs/mine", params={"limit": MANY}).json()["jobs"]
    assert [j["job_ref"] for j in listed] == refs  # the API's listing: the same rows in the same order
    columns = re.findall(r'<th scope="col"[^>]*>([^<]+)</th>', page.text)  # after the selection's checkbox column
    for (ref, row), job in zip(rows, listed, strict=True):
        cells = dict(zip(columns, (" ".join(html.unescape(re.sub(r"<[^>]+>", " ", c)).split())
                                   for c in re.findall(r"<td.*?</td>", row, re.S)[1:]), strict=True))
        assert cells["Job"] == f"{job['name']} {ref}" and cells["Status"] == job["status"]
        note = "" if job["status"] in ("succeeded", "running") else job["message"]  # a reason that says something
        assert (cells["Experiment"], cells["Recipe"], cells["Profile"], cells["GPUs"], cells["Note"]) == (
            job["exp"], job["recipe"], job["profile"], str(job["requested_gpus"]), note)
    assert f"Showing the newest {MANY} jobs." in page.text
    failed = console.browser("many").get("/", params={"limit": MANY, "status": "failed", "exp": "sweep-3"})
    kept = re.findall(r'<tr data-job="([^"]+)">', failed.text)
    assert kept == [r for i, r in enumerate(refs) if i % 4 == 1 and i % 7 == 3] and kept
    live = console.browser("many").get("/ui/api/jobs", params={"limit": MANY},
                                      headers={"Accept": "application/json"}).json()["jobs"]
    assert [(j["job_ref"], j["status"]) for j in live] == [(j["job_ref"], j["status"]) for j in listed]
    notes = re.findall(r'<td data-col="note"[^>]*>(.*?)</td>', page.text, re.S)
    assert [j["message"] for j in live] == [html.unescape(note) for note in notes]  # the cells the page shows
    assert "r-many" not in console.browser("alice").get("/", params={"limit": MANY}).text  # only the caller's own


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the page carries no CSRF token"
    return found.group(1)


def _buttons(page: str, job: str) -> list[str]:
    return re.findall(rf'<form method="post" action="/ui/jobs/{job}/(\w+)"', page)


def test_the_job_page_pauses_resumes_and_retries_with_the_sessions_csrf_token(console: Console) -> None:
    with console.api("alice") as api:
        job = admitted(submit(api, spec_for(api, exp="experiments/control-me")))
    browser, status = console.browser("alice"), lambda: console.api("alice").get("/api/job", params={"id": job}).json()
    page = browser.get(f"/ui/jobs/{job}").text
    assert _buttons(page, job) == ["pause", "stop"]
    for form in ({}, {"csrf": "0" * 64}):
        refused = browser.post(f"/ui/jobs/{job}/pause", data=form)
        assert refused.status_code == 403 and "CSRF" in refused.text, form
    assert status()["status"] != "paused"
    csrf = _csrf(page)
    paused = browser.post(f"/ui/jobs/{job}/pause", data={"csrf": csrf})
    assert paused.status_code == 303 and paused.headers["location"] == f"/ui/jobs/{job}"
    assert status()["status"] == "paused"
    assert _buttons(browser.get(f"/ui/jobs/{job}").text, job) == ["resume", "stop"]
    assert browser.post(f"/ui/jobs/{job}/resume", data={"csrf": csrf}).status_code == 303
    assert status()["status"] == "queued"
    refused = browser.post(f"/ui/jobs/{job}/retry", data={"csrf": csrf})  # only a failed or stopped job
    assert refused.status_code == 409 and "only a failed or stopped job can be retried" in html.unescape(refused.text)
    assert browser.post(f"/ui/jobs/{job}/stop", data={"csrf": csrf}).status_code == 303
    assert _buttons(browser.get(f"/ui/jobs/{job}").text, job) == ["retry"]
    assert browser.post(f"/ui/jobs/{job}/retry", data={"csrf": csrf}).status_code == 303
    assert status()["status"] == "queued"
    stranger = console.browser("bob")
    for verb in ("pause", "resume", "retry"):  # another account's job does not exist for the caller
        answer = stranger.post(f"/ui/jobs/{job}/{verb}", data={"csrf": _csrf(stranger.get("/").text)})
        assert answer.status_code == 404, verb
    assert status()["status"] == "queued"


def test_the_job_page_shows_its_attempts_and_marks_them_on_its_charts(console: Console) -> None:
    with console.api("alice") as api:
        job = admitted(submit(api, spec_for(api, exp="experiments/resumed")))
    rt = console.app.state.runtime
    run_dir = rt.settings.state_dir / "runs" / "alice" / "resumed" / job
    checkpoint = run_dir / "out" / "checkpoint-20"
    checkpoint.mkdir(parents=True)
    with rt.db.write() as db:  # what launch and watch record: a preempted attempt, then one resumed at step 20
        row = db.get(Job, job)
        assert row is not None
        row.run_dir = str(run_dir)
        attempts.begin_attempt(db, row, resume=None, now=1000.0)
        attempts.end_attempt(db, row, outcome="preempted", reason="preempted by r-urgent", now=1600.0)
        attempts.begin_attempt(db, row, resume=attempts.ResumePoint(checkpoint, 20), now=1700.0)
        record_points(db, job, [{"key": "train/loss", "step": step, "value": 1.0 / step, "ts": 0.0}
                                for step in range(1, 41)])
    page = console.browser("alice").get(f"/ui/jobs/{job}").text
    table = _section(page, "h-attempts")
    rows = re.findall(r"<tr><td>(\d+)</td>(.*?)</tr>", table, re.S)
    assert [number for number, _ in rows] == ["1", "2"]
    assert "preempted" in rows[0][1] and "preempted by r-urgent" in rows[0][1] and "—" in rows[0][1]
    assert "running" in rows[1][1] and "checkpoint-20</code> (step 20)" in rows[1][1]
    charts = _section(page, "h-metrics")
    assert charts.count('class="chart-mark"') == 1 and ">attempt 2</text>" in charts
    assert "attempt 2 from step 20" in charts  # said to screen readers too
    facts = html.unescape(re.search(r'<div id="facts">(.*?)</dl>', page, re.S).group(1))  # type: ignore[union-attr]
    assert "Attempt" in facts and "checkpoint-20" in facts
    live = console.browser("alice").get(f"/ui/jobs/{job}/live", headers={"Accept": "application/json"}).json()
    assert "checkpoint-20" in live["attempts"]
    assert live["plots"][0]["marks"] == [{"step": 20.0, "label": "attempt 2"}]  # charts.js redraws them in place


def test_a_chart_marks_only_the_resumed_attempts_inside_its_steps() -> None:
    history = [{"number": 1, "resume_step": None}, {"number": 2, "resume_step": 20},
               {"number": 3, "resume_step": None},  # started over: its earlier points were dropped, nothing to mark
               {"number": 4, "resume_step": 500}]
    marks = attempt_marks(history)
    assert marks == [Mark(20.0, "attempt 2"), Mark(500.0, "attempt 4")]
    svg = str(line_chart("loss", [(float(s), 1.0) for s in range(1, 101)], marks))
    [x] = re.findall(r'<line class="chart-mark" x1="([\d.]+)"', svg)  # step 500 is beyond the steps drawn
    assert float(x) == pytest.approx(52 + (20 - 1) / 99 * (480 - 52 - 12), abs=0.1)
    assert str(line_chart("loss", [(1.0, 1.0)], [Mark(1.0, "<b>")])).count("&lt;b&gt;") == 2  # label and summary
