"""The web console in process: sign-in and sessions, CSRF, the same permissions as the API, every asset local.

The console application on SQLite in a temporary state directory, without background loops (jobs stay queued),
driven by Starlette's test client as a browser would (cookies, forms, `Accept: text/html`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from starforge.console.app import create_app
from starforge.console.services import accounts
from starforge.console.settings import load_settings
from starforge.console.web import COOKIE, csrf_token
from starforge.console.web.charts import MAX_POINTS, charts_of
from tests.integration.helpers import spec_for, submit

HTML = {"Accept": "text/html,application/xhtml+xml"}
USERS = {"root": "admin", "alice": "operator", "bob": "operator", "vera": "operator"}


@dataclass
class Console:
    """The in-process console, an API token per user and a few jobs."""

    app: FastAPI
    tokens: dict[str, str]
    jobs: dict[str, str]

    def api(self, user: str) -> TestClient:
        """Return a client sending `user`'s bearer token."""
        return TestClient(self.app, headers={"Authorization": f"Bearer {self.tokens[user]}"})

    def browser(self, user: str | None = None) -> TestClient:
        """Return a cookie-keeping client, signed in through the sign-in form as `user` when given."""
        client = TestClient(self.app, headers=HTML, follow_redirects=False)
        if user is not None:
            answer = client.post("/ui/signin", data={"token": self.tokens[user]})
            assert answer.status_code == 303, answer.text
        return client


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    state = Path(tmp_path_factory.mktemp("web-pages")) / "state"
    app = create_app(load_settings(state_dir=state, run_background=False, capacity={"cpu": 2}))
    tokens = {}
    with app.state.runtime.db.write() as db:
        for name, role in USERS.items():
            tokens[name] = accounts.issue_api_token(db, accounts.create_user(db, name, role), "web tests")
    built = Console(app, tokens, {})
    for owner in ("alice", "vera"):
        with built.api(owner) as api:
            answer = submit(api, spec_for(api, exp=f"experiments/{owner}-toy"))
            assert answer.status_code in (200, 202), answer.text
            built.jobs[owner] = answer.json()["job_id"]
    with app.state.runtime.db.write() as db:
        accounts.set_role(db, "vera", "viewer")  # vera keeps her job but may no longer change anything
    yield built
    app.state.runtime.db.dispose()


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the page carries no CSRF token"
    return found.group(1)


def test_a_visitor_gets_the_sign_in_page(console: Console) -> None:
    page = console.browser().get("/")
    assert page.status_code == 200
    assert '<label for="token">API token</label>' in page.text and 'action="/ui/signin"' in page.text
    assert console.jobs["alice"] not in page.text
    refused = console.browser().get(f"/ui/jobs/{console.jobs['alice']}")
    assert refused.status_code == 401 and "API token" in refused.text  # a page needing a session asks for one
    assert console.browser().get("/ui/api/jobs", headers={"Accept": "application/json"}).status_code == 401


def test_a_bad_token_shows_why_and_sets_no_cookie(console: Console) -> None:
    browser = console.browser()
    for token in ("sfp_not-a-token", "", "x" * 5000):
        answer = browser.post("/ui/signin", data={"token": token})
        assert answer.status_code == 401
        assert 'role="alert"' in answer.text and "Not signed in" in answer.text
        assert "set-cookie" not in answer.headers
    assert not browser.cookies


def test_a_good_token_starts_a_session_with_a_strict_http_only_cookie(console: Console) -> None:
    browser = console.browser()
    answer = browser.post("/ui/signin", data={"token": console.tokens["alice"]})
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    cookie = answer.headers["set-cookie"]
    attributes = {part.strip().split("=")[0].lower(): part.strip() for part in cookie.split(";")}
    assert "httponly" in attributes and attributes["samesite"].lower() == "samesite=strict"
    assert attributes["path"] == "Path=/" and "secure" not in attributes  # plain http here: Secure only over https
    secret = browser.cookies[COOKIE]
    assert secret != console.tokens["alice"]  # a session of its own, never the typed token
    jobs = browser.get("/")
    assert jobs.status_code == 200 and "alice" in jobs.text and console.jobs["alice"] in jobs.text
    assert console.jobs["vera"] not in jobs.text  # only the caller's own jobs
    assert _csrf(jobs.text) == csrf_token(secret)
    live = browser.get("/ui/api/jobs", headers={"Accept": "application/json"}).json()
    assert [j["job_ref"] for j in live["jobs"]] == [console.jobs["alice"]]


def test_the_jobs_page_filters_by_status_and_experiment(console: Console) -> None:
    browser = console.browser("alice")
    status = browser.get("/", params={"status": "succeeded"})
    assert status.status_code == 200 and console.jobs["alice"] not in status.text
    exp = browser.get("/", params={"exp": "alice-toy"})
    assert console.jobs["alice"] in exp.text
    other = browser.get("/", params={"exp": "nothing-here"})
    assert console.jobs["alice"] not in other.text
    bad = browser.get("/", params={"status": "sleeping"})
    assert bad.status_code == 200 and "status: no job status &#39;sleeping&#39;" in bad.text  # the problem, with its hint


def test_a_job_page_shows_the_job(console: Console) -> None:
    job = console.jobs["alice"]
    page = console.browser("alice").get(f"/ui/jobs/{job}")
    assert page.status_code == 200
    for part in ("Status history", "Admission", "Artifacts", "JobSpec", f'data-stream="/ui/jobs/{job}/logs"',
                 "Stop job", "tinyrl/grpo"):
        assert part in page.text, part
    live = console.browser("alice").get(f"/ui/jobs/{job}/live", headers={"Accept": "application/json"}).json()
    assert live["final"] is False and live["status"] in ("queued", "pending", "submitted")


def test_another_users_job_does_not_exist_for_the_caller(console: Console) -> None:
    browser, job = console.browser("bob"), console.jobs["alice"]
    page = browser.get(f"/ui/jobs/{job}")
    assert page.status_code == 404 and "Not found" in page.text
    csrf = _csrf(browser.get("/").text)
    for method, path in (("GET", f"/ui/jobs/{job}/live"), ("GET", f"/ui/jobs/{job}/logs"),
                         ("GET", f"/ui/jobs/{job}/artifacts/download"), ("POST", f"/ui/jobs/{job}/stop")):
        answer = browser.request(method, path, data={"csrf": csrf} if method == "POST" else None)
        assert answer.status_code == 404, (path, answer.status_code)
    assert job not in browser.get("/").text


def test_a_viewer_sees_the_job_but_cannot_stop_it(console: Console) -> None:
    browser, job = console.browser("vera"), console.jobs["vera"]
    page = browser.get(f"/ui/jobs/{job}")
    assert page.status_code == 200 and job in page.text
    assert "Stop job" not in page.text and "/stop" not in page.text
    refused = browser.post(f"/ui/jobs/{job}/stop", data={"csrf": _csrf(page.text)})
    assert refused.status_code == 403 and "viewers cannot stop jobs" in refused.text
    assert console.api("vera").get("/api/job", params={"id": job}).json()["status"] != "stopped"


def test_stopping_needs_the_sessions_csrf_token(console: Console) -> None:
    browser = console.browser("alice")
    with console.api("alice") as api:
        job = submit(api, spec_for(api, exp="experiments/stop-me")).json()["job_id"]
    page = browser.get(f"/ui/jobs/{job}")
    for form in ({}, {"csrf": ""}, {"csrf": "0" * 64}, {"csrf": csrf_token(console.tokens["alice"])}):
        refused = browser.post(f"/ui/jobs/{job}/stop", data=form)
        assert refused.status_code == 403 and "CSRF" in refused.text, form
    assert console.api("alice").get("/api/job", params={"id": job}).json()["status"] != "stopped"
    stopped = browser.post(f"/ui/jobs/{job}/stop", data={"csrf": _csrf(page.text)})
    assert stopped.status_code == 303 and stopped.headers["location"] == f"/ui/jobs/{job}"
    assert console.api("alice").get("/api/job", params={"id": job}).json()["status"] == "stopped"
    after = browser.get(f"/ui/jobs/{job}")
    assert "Stop job" not in after.text and "stopped by alice" in after.text


def test_signing_out_revokes_the_session(console: Console) -> None:
    browser = console.browser("alice")
    secret = browser.cookies[COOKIE]
    page = browser.get("/")
    refused = browser.post("/ui/signout", data={"csrf": "wrong"})
    assert refused.status_code == 403
    out = browser.post("/ui/signout", data={"csrf": _csrf(page.text)})
    assert out.status_code == 303 and COOKIE in out.headers["set-cookie"]
    replay = console.browser()
    replay.cookies.set(COOKIE, secret)  # the old cookie, kept by an attacker, is worth nothing now
    assert replay.get(f"/ui/jobs/{console.jobs['alice']}").status_code == 401
    assert 'action="/ui/signin"' in replay.get("/").text
    bearer = TestClient(console.app, headers={"Authorization": f"Bearer {secret}"})
    assert bearer.get("/api/whoami").status_code == 401  # the session's login is revoked for the API too
    assert console.api("alice").get("/api/whoami").status_code == 200  # the API token itself lives on


def test_the_other_pages_render(console: Console) -> None:
    browser = console.browser("alice")
    with console.api("alice") as api:
        spec = spec_for(api, exp="experiments/refused")
        spec["spec"]["resources"]["pools"][0]["series"] = "no-such-series"
        assert submit(api, spec).status_code in (400, 403)
    rejections = browser.get("/ui/rejections")
    assert rejections.status_code == 200 and "rejected" in rejections.text and "spec.resources" in rejections.text
    quota = browser.get("/ui/quota")
    assert quota.status_code == 200 and "Cluster capacity" in quota.text and "cpu" in quota.text
    recipes = browser.get("/ui/recipes")
    assert recipes.status_code == 200 and "tinyrl/grpo" in recipes.text and "max_num_steps" in recipes.text


def test_the_device_page_approves_a_cli_login_with_the_session(console: Console) -> None:
    grant = console.browser().post("/api/cli/device/code", json={}).json()
    browser = console.browser("alice")
    page = browser.get("/ui/device", params={"code": grant["user_code"]})
    assert page.status_code == 200 and grant["user_code"] in page.text
    assert browser.post("/ui/device", data={"user_code": grant["user_code"]}).status_code == 403  # no CSRF token
    approved = browser.post("/ui/device", data={"user_code": grant["user_code"], "csrf": _csrf(page.text)})
    assert approved.status_code == 200 and "Approved" in approved.text
    tokens = console.browser().post("/api/cli/device/token", json={"device_code": grant["device_code"]}).json()
    assert tokens["user"]["username"] == "alice"


def test_the_api_reference_is_served_offline(console: Console) -> None:
    docs = console.browser().get("/docs")
    assert docs.status_code == 200 and "/api/jobs/mine" in docs.text and "/api/job/stop" in docs.text
    assert console.browser().get("/redoc").status_code == 404
    assert console.browser().get("/openapi.json").status_code == 200


def test_every_asset_of_every_page_is_served_by_the_console(console: Console) -> None:
    browser = console.browser("alice")
    pages = ["/", f"/ui/jobs/{console.jobs['alice']}", "/ui/rejections", "/ui/quota", "/ui/recipes", "/ui/device",
             "/docs"]
    urls: set[str] = set()
    for path in pages:
        page = browser.get(path)
        assert page.status_code == 200, path
        assert "default-src 'self'" in page.headers["content-security-policy"]
        urls |= set(re.findall(r'(?:src|href|action|data-stream|data-live)="([^"]*)"', page.text))
    assert urls
    for url in urls:
        assert url.startswith(("/", "#")) and not url.startswith("//"), url  # relative to the console: no CDN
    assets = sorted(u for u in urls if u.startswith("/ui/static/"))
    assert len(assets) == 2
    for url in assets:
        assert browser.get(url).status_code == 200, url
    assert browser.get("/ui/static/..%2Fpages.py").status_code == 404
    assert browser.get("/ui/static/pages.py").status_code == 404


def test_a_chart_is_an_svg_polyline_of_the_points() -> None:
    series = {"train/loss": [[step, 1.0 / (step + 1), 0.0] for step in range(1000)], "train/reward": [[0, 0.5, 0.0]]}
    loss, reward = charts_of(series)
    assert loss.key == "train/loss" and loss.points == 1000 and loss.latest == pytest.approx(0.001)
    drawn = re.search(r'<polyline class="chart-line" points="([^"]*)"', str(loss.svg))
    assert drawn and MAX_POINTS // 2 <= len(drawn.group(1).split()) <= MAX_POINTS + 1  # thinned, never more
    assert str(loss.svg).startswith("<svg") and "<script" not in str(loss.svg)
    assert "<polyline" in str(reward.svg)  # one point still draws
    assert "&lt;b&gt;" in str(charts_of({"<b>": [[1, 2.0, 0.0]]})[0].svg)  # keys are escaped


def test_the_admin_page_is_for_administrators_and_its_forms_need_csrf(console: Console) -> None:
    with console.app.state.runtime.db.write() as db:
        accounts.create_user(db, "dora", "operator")
    operator = console.browser("alice")
    assert "/ui/admin" not in operator.get("/").text
    assert operator.get("/ui/admin").status_code == 403
    own = _csrf(operator.get("/").text)
    refused = operator.post("/ui/admin/users/dora/role", data={"role": "admin", "csrf": own})
    assert refused.status_code == 403
    root = console.browser("root")
    page = root.get("/ui/admin")
    assert page.status_code == 200 and 'data-user="dora"' in page.text and "Maintenance mode" in page.text
    assert root.post("/ui/admin/users/dora/role", data={"role": "viewer"}).status_code == 403  # no CSRF token
    changed = root.post("/ui/admin/users/dora/role", data={"role": "viewer", "csrf": _csrf(page.text)})
    assert changed.status_code == 303
    disabled = root.post("/ui/admin/users/dora/disabled", data={"disabled": "true", "csrf": _csrf(page.text)})
    assert disabled.status_code == 303
    users = {u["username"]: u for u in console.api("root").get("/api/admin/users").json()["users"]}
    assert users["dora"]["role"] == "viewer" and users["dora"]["disabled"] is True
    assert users["alice"]["role"] == "operator"  # the operator's attempt changed nothing


def test_signing_in_returns_to_the_page_asked_for_and_only_to_this_console(console: Console) -> None:
    job_page = f"/ui/jobs/{console.jobs['alice']}"
    asked = console.browser().get(job_page)
    assert asked.status_code == 401 and f'name="after" value="{job_page}"' in asked.text
    back = console.browser().post("/ui/signin", data={"token": console.tokens["alice"], "after": job_page})
    assert back.status_code == 303 and back.headers["location"] == job_page
    for elsewhere in ("//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"):
        sent = console.browser().post("/ui/signin", data={"token": console.tokens["alice"], "after": elsewhere})
        assert sent.status_code == 303 and sent.headers["location"] == "/", elsewhere
