"""The web console in process: sign-in and sessions (never API tokens), CSRF and the sign-in Origin check, the same
permissions as the API, every asset local; the anonymous and device-login surfaces with their per-address limits.

The console application on SQLite in a temporary state directory, without background loops (jobs stay queued),
driven by Starlette's test client as a browser would (cookies, forms, `Accept: text/html`). Tests of a limit swap
in limiters on a clock they move (`clock`), and send from addresses of their own.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import func, select
from starlette.testclient import TestClient

from starforge.console.app import create_app
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.accounts import device
from starforge.console.services.throttle import Limits, Rate, Throttles
from starforge.console.settings import load_settings
from starforge.console.store.models import DeviceCode
from starforge.console.web import COOKIE, SECURE_COOKIE, csrf_token
from starforge.console.web.assets import ASSETS
from starforge.console.web.charts import MAX_POINTS, charts_of
from starforge.console.web.sessions import reached_securely
from tests.integration.helpers import admitted, spec_for, submit

HTML = {"Accept": "text/html,application/xhtml+xml"}
USERS = {"root": "admin", "alice": "operator", "bob": "operator", "vera": "operator"}


@dataclass
class Console:
    """The in-process console, an API token per user and a few jobs."""

    app: FastAPI
    tokens: dict[str, str]
    jobs: dict[str, str]

    def api(self, user: str, address: str = "testclient") -> TestClient:
        """Return a client sending `user`'s bearer token (from `address`)."""
        return TestClient(self.app, headers={"Authorization": f"Bearer {self.tokens[user]}"}, client=(address, 50000))

    def browser(self, user: str | None = None, *, address: str = "testclient",
                base_url: str = "http://testserver") -> TestClient:
        """Return a cookie-keeping client (from `address`, at `base_url`), signed in through the sign-in form as
        `user` when given."""
        client = TestClient(self.app, headers=HTML, follow_redirects=False, client=(address, 50000), base_url=base_url)
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
            built.jobs[owner] = admitted(answer, "submitted")  # 2 CPU slots for these 2 jobs
    with app.state.runtime.db.write() as db:
        accounts.set_role(db, "vera", "viewer")  # vera keeps her job but may no longer change anything
    yield built
    app.state.runtime.db.dispose()


class Clock:
    """A clock the test moves: what the console's limiters read instead of the time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(console: Console) -> Iterator[Clock]:
    """Give the console fresh limiters on a clock the test moves; the console's own come back afterwards."""
    app = console.app
    kept, tick = app.state.runtime, Clock()
    app.state.runtime = replace(kept, throttles=Throttles(clock=tick))  # the same console, other limiters
    yield tick
    app.state.runtime = kept


def _device(**facts: Any) -> str:
    """The `device` parameter of a device login (wire §4.5): base64url JSON, unpadded."""
    return base64.urlsafe_b64encode(json.dumps(facts).encode()).decode().rstrip("=")


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


def test_a_web_session_opens_the_pages_but_is_never_an_api_token(console: Console) -> None:
    browser = console.browser("root")  # an administrator's session: what a listener on another port would receive
    secret, job = browser.cookies[COOKIE], console.jobs["alice"]
    assert browser.get("/ui/admin").status_code == 200
    json_ = {"Accept": "application/json"}
    assert browser.get("/ui/api/jobs", headers=json_).status_code == 200  # the pages' own JSON
    assert browser.get(f"/ui/jobs/{job}/live", headers=json_).status_code == 200
    as_bearer = TestClient(console.app, headers={"Authorization": f"Bearer {secret}", **json_})
    for path in ("/api/admin/users", "/api/whoami", "/api/jobs/mine"):
        refused = as_bearer.get(path)
        assert refused.status_code == 401, (path, refused.text)
        assert "a web session is not an API token" in refused.json()["detail"], path
    mcp = as_bearer.post("/api/mcp/rpc", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                         headers={"Accept": "application/json, text/event-stream"})
    assert mcp.status_code == 401 and "a web session is not an API token" in mcp.json()["detail"]
    assert browser.get("/api/whoami", headers=json_).status_code == 401  # the API never reads the cookie
    assert as_bearer.get("/ui/api/jobs").status_code == 401  # nor does a page take the session as a bearer token
    cookie_of_a_token = console.browser()
    cookie_of_a_token.cookies.set(COOKIE, console.tokens["root"])  # an API token in the cookie opens no page either
    assert cookie_of_a_token.get("/ui/admin").status_code == 401
    assert console.api("alice").get("/ui/api/jobs", headers=json_).status_code == 200  # API tokens open pages


def test_over_https_the_session_cookie_is_host_prefixed_and_secure(console: Console) -> None:
    browser = console.browser(base_url="https://testserver")
    answer = browser.post("/ui/signin", data={"token": console.tokens["alice"]})
    assert answer.status_code == 303, answer.text
    cookie = answer.headers["set-cookie"]
    attributes = {part.strip().split("=")[0].lower(): part.strip() for part in cookie.split(";")}
    assert cookie.startswith(f"{SECURE_COOKIE}=") and "secure" in attributes and attributes["path"] == "Path=/"
    assert "domain" not in attributes and "httponly" in attributes and attributes["samesite"] == "SameSite=strict"
    assert browser.get("/").status_code == 200 and console.jobs["alice"] in browser.get("/").text
    plain = console.browser(base_url="https://testserver")
    plain.cookies.set(COOKIE, browser.cookies[SECURE_COOKIE])  # over https only the __Host- cookie is read
    assert 'action="/ui/signin"' in plain.get("/").text
    out = browser.post("/ui/signout", data={"csrf": _csrf(browser.get("/").text)})
    assert out.headers["set-cookie"].startswith(f"{SECURE_COOKIE}=") and "Secure" in out.headers["set-cookie"]
    assert reached_securely("http", "https://console.example") and not reached_securely("http", "")


@pytest.mark.parametrize("headers", [{"Origin": "http://evil.example"}, {"Origin": "http://testserver:8081"},
                                     {"Origin": "https://testserver"}, {"Origin": "null"},
                                     {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}],
                         ids=["other-site", "other-port", "other-scheme", "null", "cross-site", "same-site"])
def test_sign_in_refuses_a_form_sent_from_another_origin(console: Console, headers: dict[str, str]) -> None:
    browser = console.browser()
    refused = browser.post("/ui/signin", data={"token": console.tokens["alice"]}, headers=headers)
    assert refused.status_code == 403, refused.text
    assert 'role="alert"' in refused.text and "sent from another" in refused.text
    assert "set-cookie" not in refused.headers and not browser.cookies


def test_sign_in_takes_a_form_from_this_console_with_or_without_an_origin(console: Console) -> None:
    for headers in ({}, {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"}, {"Origin": "HTTP://TestServer:80"}):
        answer = console.browser().post("/ui/signin", data={"token": console.tokens["alice"]}, headers=headers)
        assert answer.status_code == 303, (headers, answer.text)


def test_sign_in_backs_off_an_address_that_keeps_failing(console: Console, clock: Clock) -> None:
    guesser, neighbour = console.browser(address="203.0.113.5"), console.browser(address="203.0.113.6")
    free = Limits().sign_in.free
    for _ in range(free + 1):
        assert guesser.post("/ui/signin", data={"token": "sfp_guess"}).status_code == 401
    refused = guesser.post("/ui/signin", data={"token": console.tokens["alice"]})  # even a good token must wait
    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert "too many failed sign-ins" in refused.text and "set-cookie" not in refused.headers
    assert neighbour.post("/ui/signin", data={"token": console.tokens["alice"]}).status_code == 303
    clock.now += 1
    assert guesser.post("/ui/signin", data={"token": "sfp_guess"}).status_code == 401
    assert guesser.post("/ui/signin", data={"token": "sfp_guess"}).headers["retry-after"] == "2"  # and it doubles
    clock.now += 2
    assert guesser.post("/ui/signin", data={"token": console.tokens["alice"]}).status_code == 303


def test_guessing_user_codes_backs_off(console: Console, clock: Clock) -> None:
    bob = console.api("bob", address="203.0.113.7")
    for _ in range(Limits().user_codes.free + 1):
        assert bob.post("/api/cli/device/approve", json={"user_code": "BCDF-GHJK"}).status_code == 404
    refused = bob.post("/api/cli/device/approve", json={"user_code": "BCDF-GHJK"})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "too many unknown login codes" in refused.json()["detail"]
    browser = console.browser("bob", address="203.0.113.7")
    landing = browser.get("/ui/device")
    page = browser.post("/ui/device/review", data={"user_code": "BCDF-GHJK", "csrf": _csrf(landing.text)})
    assert page.status_code == 429 and "retry-after" in page.headers  # the page refuses alike, as a page
    clock.now += 1
    assert bob.post("/api/cli/device/approve", json={"user_code": "BCDF-GHJK"}).status_code == 404


def test_device_logins_are_rate_limited_per_address(console: Console, clock: Clock) -> None:
    app = console.app
    app.state.runtime = replace(app.state.runtime, throttles=Throttles(Limits(device_codes=Rate(5, 60.0)), clock=clock))
    flood = console.browser(address="198.51.100.1")
    for _ in range(5):
        assert flood.post("/api/cli/device/code", json={}).status_code == 200
    refused = flood.post("/api/cli/device/code", json={})
    assert refused.status_code == 429 and refused.headers["retry-after"] == "12"
    assert "too many device logins started from this address" in refused.json()["detail"]
    assert console.browser(address="198.51.100.2").post("/api/cli/device/code", json={}).status_code == 200
    clock.now += 12
    assert flood.post("/api/cli/device/code", json={}).status_code == 200


def test_an_address_holds_a_bounded_number_of_pending_device_logins(console: Console, clock: Clock) -> None:
    app = console.app
    app.state.runtime = replace(app.state.runtime, throttles=Throttles(
        Limits(device_codes=Rate(1000, 1.0), pending_device_codes=3), clock=clock))
    asker = console.browser(address="198.51.100.3")
    grants = [asker.post("/api/cli/device/code", json={}).json() for _ in range(3)]
    refused = asker.post("/api/cli/device/code", json={})
    assert refused.status_code == 429 and "3 device logins waiting" in refused.json()["detail"]
    assert 800 < int(refused.headers["retry-after"]) <= 901  # until the oldest expires
    assert console.api("alice").post("/api/cli/device/approve", json={"user_code": grants[0]["user_code"]}).json()[
        "approved"]
    assert asker.post("/api/cli/device/code", json={}).status_code == 200  # an approved one no longer counts


def test_expired_device_logins_are_purged_a_bounded_batch_per_new_code(console: Console, clock: Clock) -> None:
    rt = console.app.state.runtime
    with rt.db.write() as db:
        for _ in range(device.PURGE_BATCH + 50):
            device.start(db, device_info={}, ttl=-10_000, interval=5, client="purge")
        late = device.start(db, device_info={}, ttl=-10, interval=5, client="purge")  # expired, within the grace

    def left() -> int:
        with rt.db.read() as db:
            return int(db.scalar(select(func.count()).select_from(DeviceCode).where(DeviceCode.client == "purge")))

    assert left() == device.PURGE_BATCH + 51
    assert console.browser().post("/api/cli/device/code", json={}).status_code == 200
    assert left() == 51  # bounded work per call
    assert console.browser().post("/api/cli/device/code", json={}).status_code == 200
    assert left() == 1
    polled = console.browser().post("/api/cli/device/token", json={"device_code": late.device_code})
    assert polled.json()["detail"] == "expired_token"  # a late poll still reads why


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


def test_approving_from_a_link_shows_the_device_first_and_never_in_one_click(console: Console) -> None:
    described = _device(hostname="build-7", user="alice", os="Linux", cli_version="0.3.56")
    grant = console.browser(address="192.0.2.44").post("/api/cli/device/code", json={"device": described}).json()
    link = console.browser().get("/cli/device", params={"code": grant["user_code"]})  # verification_uri_complete
    assert link.status_code == 303 and link.headers["location"] == f"/ui/device?code={grant['user_code']}"
    browser = console.browser("alice")
    landing = browser.get(link.headers["location"])
    assert landing.status_code == 200 and f'value="{grant["user_code"]}"' in landing.text
    assert 'action="/ui/device"' not in landing.text and "Approve for" not in landing.text  # nothing to approve yet
    assert 'action="/ui/device/review"' in landing.text
    review = browser.post("/ui/device/review", data={"user_code": grant["user_code"], "csrf": _csrf(landing.text)})
    assert review.status_code == 200, review.text
    for shown in ("build-7", "0.3.56", "Linux", "192.0.2.44", "Approve for alice", 'action="/ui/device"'):
        assert shown in review.text, shown  # which device asks, and from which address, before any approval
    assert browser.post("/ui/device", data={"user_code": grant["user_code"]}).status_code == 403  # no CSRF token
    pending = console.browser().post("/api/cli/device/token", json={"device_code": grant["device_code"]})
    assert pending.json()["detail"] == "authorization_pending"
    approved = browser.post("/ui/device", data={"user_code": grant["user_code"], "csrf": _csrf(review.text)})
    assert approved.status_code == 200 and "Approved" in approved.text
    tokens = console.browser().post("/api/cli/device/token", json={"device_code": grant["device_code"]}).json()
    assert tokens["user"]["username"] == "alice"


def test_the_device_pages_send_the_headers_of_every_page(console: Console) -> None:
    browser = console.browser("alice")
    grant = console.browser().post("/api/cli/device/code", json={}).json()
    landing = browser.get("/ui/device", params={"code": grant["user_code"]})
    answers = [console.browser().get("/cli/device", params={"code": grant["user_code"]}), landing,
               browser.post("/ui/device/review", data={"user_code": grant["user_code"], "csrf": _csrf(landing.text)})]
    for answer in answers:
        assert answer.status_code in (200, 303), answer.text
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"], answer.url
        assert answer.headers["x-content-type-options"] == "nosniff", answer.url
    assert "<script>" not in console.browser().get("/cli/device", params={"code": "<script>x"}).headers["location"]


def test_only_the_account_the_device_names_or_an_admin_can_deny_it(console: Console) -> None:
    def start(user: str) -> dict[str, Any]:
        grant: dict[str, Any] = console.browser().post("/api/cli/device/code", json={"device": _device(user=user)}).json()
        return grant

    def poll(grant: dict[str, Any]) -> str:
        answer = console.browser().post("/api/cli/device/token", json={"device_code": grant["device_code"]})
        return str(answer.json()["detail"])

    grant = start("alice")
    for other in ("bob", "vera"):  # another operator, a viewer: for them it does not exist
        refused = console.api(other).post("/api/cli/device/deny", json={"user_code": grant["user_code"]})
        assert refused.status_code == 404, (other, refused.text)
    assert poll(grant) == "authorization_pending"
    browser = console.browser("bob")
    landing = browser.get("/ui/device")
    review = browser.post("/ui/device/review", data={"user_code": grant["user_code"], "csrf": _csrf(landing.text)})
    assert review.status_code == 200 and "/ui/device/deny" not in review.text  # bob may look and approve, not deny
    assert browser.post("/ui/device/deny", data={"user_code": grant["user_code"],
                                                 "csrf": _csrf(landing.text)}).status_code == 404
    alice = console.browser("alice")
    landing = alice.get("/ui/device")
    review = alice.post("/ui/device/review", data={"user_code": grant["user_code"], "csrf": _csrf(landing.text)})
    assert 'action="/ui/device/deny"' in review.text
    denied = alice.post("/ui/device/deny", data={"user_code": grant["user_code"], "csrf": _csrf(review.text)})
    assert denied.status_code == 200 and "Denied" in denied.text
    assert poll(grant) == "access_denied"
    other = start("somebody-else")
    assert console.api("root").post("/api/cli/device/deny", json={"user_code": other["user_code"]}).json() == {
        "denied": True}
    assert poll(other) == "access_denied"


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
    assert len(assets) == len(ASSETS)  # every page loads every static file (base.html)
    for url in assets:
        assert browser.get(url).status_code == 200, url
    assert browser.get("/ui/static/..%2Fpages.py").status_code == 404
    assert browser.get("/ui/static/pages.py").status_code == 404
    assert browser.get("/ui/static/vendor/uplot/README.md").status_code == 404  # only listed names, paths too
    assert browser.get("/ui/static/vendor/uplot/..%2F..%2F..%2Fpages.py").status_code == 404


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
