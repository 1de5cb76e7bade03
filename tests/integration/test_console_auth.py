"""Accounts and authentication against a real console: the auth matrix, device flow, refresh, hashing."""

from __future__ import annotations

import json
import re
import uuid

import httpx
import pytest

from tests.integration.conftest import BACKENDS, TLS, ConsoleProcess, unique
from tests.integration.helpers import spec_for, submit

PUBLIC = {"/api/version", "/api/cli/device/code", "/api/cli/device/token", "/api/auth/refresh", "/api/auth/logout"}


def test_version_needs_no_token(console: ConsoleProcess) -> None:
    body = httpx.get(f"{console.url}/api/version").json()
    assert body["api"] == "forge/v2" and body["server"]


def test_every_api_route_requires_a_token(console: ConsoleProcess) -> None:
    with httpx.Client(base_url=console.url, verify=TLS) as anonymous:  # no credentials of its own
        schema = anonymous.get("/openapi.json").json()
        checked = 0
        for path, methods in schema["paths"].items():
            if not path.startswith("/api/") or path in PUBLIC:
                continue
            concrete = path.replace("{ref}", "r-0000000000").replace("{owner}", "x").replace("{name}", "y")
            concrete = concrete.replace("{username}", "nobody").replace("{kind}", "corpus")
            for method in methods:
                anonymous.cookies.clear()  # each request as a stranger's first one
                response = anonymous.request(method.upper(), concrete)
                assert response.status_code == 401, (method, path, response.text)
                assert response.json()["detail"]
                bad = anonymous.request(method.upper(), concrete, headers={"Authorization": "Bearer nope"})
                assert bad.status_code == 401, (method, path)
                checked += 1
    assert checked >= 15


def test_whoami_has_both_shapes(console: ConsoleProcess) -> None:
    name = unique()
    with console.client(console.token_for(name)) as api:
        body = api.get("/api/whoami").json()
    assert body["username"] == name and body["user"]["username"] == name and body["user"]["role"] == "operator"


def test_cluster_status_publishes_both_key_sets(console: ConsoleProcess) -> None:
    with console.client(console.token_for(unique())) as api:
        body = api.get("/api/cluster/status").json()
    names = {p["name"] for p in body["profiles"]}
    assert {"cpu", "h200"} <= names
    kinds = {p["name"]: p["kind"] for p in body["profiles"]}  # ours: a CPU series' slots are CPUs (runtimes.cpu_series)
    assert (kinds["cpu"], kinds["h200"]) == ("cpu", "gpu")
    gpu = body["gpu"]
    for key in ("total", "used", "free", "blocked", "queued", "gpu_total", "gpu_used", "gpu_free"):
        assert isinstance(gpu[key], int), key
    assert {s["id"] for s in gpu["series"]} >= {"cpu", "h200"}
    assert isinstance(body["active_count"], int)


def test_usage_numbers_are_never_null(console: ConsoleProcess) -> None:
    with console.client(console.token_for(unique())) as api:
        body = api.get("/api/usage/mine").json()
    assert all(v is not None for v in body["quota"].values())
    assert isinstance(body["usage"]["gpu_hours_today"], float | int)


def test_users_see_only_their_own_jobs(console: ConsoleProcess) -> None:
    alice, bob = unique("alice"), unique("bob")
    with console.client(console.token_for(alice)) as a, console.client(console.token_for(bob)) as b:
        job = submit(a, spec_for(a, series="h200", gpus=8)).json()["job_id"]
        assert b.get("/api/job", params={"id": job}).status_code == 404
        assert b.post("/api/job/stop", params={"id": job}).status_code == 404
        assert b.get(f"/api/jobs/{job}/jobspec").status_code == 404
        assert all(row["job_ref"] != job for row in b.get("/api/jobs/mine", params={"limit": 200}).json()["jobs"])
        assert a.get("/api/job", params={"id": job}).json()["job_ref"] == job
    with console.client(console.admin_token) as admin:
        assert admin.get("/api/job", params={"id": job}).status_code == 200
        rows = admin.get("/api/jobs/mine", params={"limit": 200, "all": "true"}).json()["jobs"]
        assert any(row["job_ref"] == job for row in rows)


def test_viewer_can_read_but_not_submit(console: ConsoleProcess) -> None:
    with console.client(console.token_for(unique("viewer"), "viewer")) as v:
        assert v.get("/api/jobs/mine").status_code == 200
        refused = submit(v, spec_for(v))
        assert refused.status_code == 403 and "viewer" in refused.json()["detail"]


def test_non_admin_cannot_use_admin_endpoints(console: ConsoleProcess) -> None:
    with console.client(console.token_for(unique())) as api:
        assert api.get("/api/admin/users").status_code == 403
        assert api.post("/api/admin/quotas", json={"username": "x"}).status_code == 403


@pytest.mark.parametrize("console", BACKENDS, indirect=True)  # token rows: rotation and family revocation
def test_device_flow_approve_and_refresh_rotation(console: ConsoleProcess) -> None:
    name = unique()
    approver = console.token_for(name)
    code = httpx.post(f"{console.url}/api/cli/device/code", json={"device": ""})
    assert code.status_code == 200
    grant = code.json()
    assert grant["interval"] >= 1 and grant["expires_in"] > 60 and grant["verification_uri_complete"]
    pending = httpx.post(f"{console.url}/api/cli/device/token", json={"device_code": grant["device_code"]})
    assert pending.status_code == 400 and pending.json()["detail"] == "authorization_pending"
    with console.client(approver) as api:
        assert api.post("/api/cli/device/approve", json={"user_code": grant["user_code"].lower()}).status_code == 200
    tokens = httpx.post(f"{console.url}/api/cli/device/token", json={"device_code": grant["device_code"]})
    assert tokens.status_code == 200, tokens.text
    session = tokens.json()
    assert session["user"]["username"] == name and session["expires_in"] > 60
    again = httpx.post(f"{console.url}/api/cli/device/token", json={"device_code": grant["device_code"]})
    assert again.status_code == 400  # a device code is single-use
    with console.client(session["access_token"]) as api:
        assert api.get("/api/whoami").json()["username"] == name
    rotated = httpx.post(f"{console.url}/api/auth/refresh", json={"refresh_token": session["refresh_token"]})
    assert rotated.status_code == 200 and rotated.json()["refresh_token"] != session["refresh_token"]
    reuse = httpx.post(f"{console.url}/api/auth/refresh", json={"refresh_token": session["refresh_token"]})
    assert reuse.status_code == 401
    # reuse of a rotated token revokes the whole family, including the newest tokens
    assert httpx.post(f"{console.url}/api/auth/refresh",
                      json={"refresh_token": rotated.json()["refresh_token"]}).status_code == 401
    with console.client(rotated.json()["access_token"]) as api:
        assert api.get("/api/whoami").status_code == 401


def test_the_device_page_is_approved_in_a_web_session_and_shows_the_connections_own_address(
        console: ConsoleProcess) -> None:
    name = unique()
    token = console.token_for(name)
    # a forwarded address is believed only from a configured trusted proxy (none here): the page shows the peer's
    spoofed = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"}
    grant = httpx.post(f"{console.url}/api/cli/device/code", json={}, headers=spoofed).json()
    link = httpx.get(grant["verification_uri_complete"])
    assert link.status_code == 303 and link.headers["location"] == f"/ui/device?code={grant['user_code']}"
    with httpx.Client(base_url=console.url, headers={"Accept": "text/html"}) as browser:
        assert browser.get(link.headers["location"]).status_code == 401  # sign in first
        assert browser.post("/ui/signin", data={"token": token}).status_code == 303
        landing = browser.get(link.headers["location"])
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', landing.text)
        assert landing.status_code == 200 and csrf
        review = browser.post("/ui/device/review", data={"user_code": grant["user_code"], "csrf": csrf.group(1)})
        assert review.status_code == 200 and "<code>127.0.0.1</code>" in review.text, review.text
        assert "203.0.113.9" not in review.text
        done = browser.post("/ui/device", data={"user_code": grant["user_code"], "csrf": csrf.group(1)})
        assert done.status_code == 200 and "Approved" in done.text
    tokens = httpx.post(f"{console.url}/api/cli/device/token", json={"device_code": grant["device_code"]})
    assert tokens.status_code == 200 and tokens.json()["user"]["username"] == name


def test_logout_revokes_the_login(console: ConsoleProcess) -> None:
    grant = httpx.post(f"{console.url}/api/cli/device/code", json={}).json()
    with console.client(console.token_for(unique())) as api:
        api.post("/api/cli/device/approve", json={"user_code": grant["user_code"]})
    session = httpx.post(f"{console.url}/api/cli/device/token", json={"device_code": grant["device_code"]}).json()
    assert httpx.post(f"{console.url}/api/auth/logout", json={"refresh_token": session["refresh_token"]}).json()["ok"]
    with console.client(session["access_token"]) as api:
        assert api.get("/api/whoami").status_code == 401


def test_disabled_account_is_refused(console: ConsoleProcess) -> None:
    name = unique()
    token = console.token_for(name)
    with console.client(console.admin_token) as admin:
        assert admin.patch(f"/api/admin/users/{name}/disabled", params={"disabled": "true"}).status_code == 200
    with console.client(token) as api:
        assert api.get("/api/whoami").status_code == 401
    with console.client(console.admin_token) as admin:
        admin.patch(f"/api/admin/users/{name}/disabled", params={"disabled": "false"})
    with console.client(token) as api:
        assert api.get("/api/whoami").status_code == 401  # disabling revoked the token for good
    with console.client(console.token_for(name)) as api:
        assert api.get("/api/whoami").status_code == 200  # a re-enabled account gets new tokens


@pytest.mark.parametrize("console", BACKENDS, indirect=True)
def test_sf_console_token_create_prints_a_working_token(console: ConsoleProcess) -> None:
    """The real command (other tests call the same operator function in process, see `ConsoleProcess.token_for`)."""
    name = unique("cli")
    token = console.cli_token_for(name, "viewer")
    with console.client(token) as api:
        body = api.get("/api/whoami").json()
    assert body["username"] == name and body["user"]["role"] == "viewer"
    again = console.cli_token_for(name, "viewer")  # an existing account gets another token; the first one still works
    assert again != token
    with console.client(token) as api:
        assert api.get("/api/whoami").status_code == 200


def test_sf_console_token_create_refuses_an_unknown_account_unless_create(console: ConsoleProcess) -> None:
    """A typo in --user never makes an operator account: it is refused with the close names, and --create makes one."""
    name = unique("alice")
    console.cli_token_for(name)
    typo = name[:-1] + ("x" if name[-1] != "x" else "y")  # one letter wrong (swapping two could swap "33" for "33")
    refused = console.sf("token", "create", "--user", typo)
    assert refused.returncode == 1 and refused.stdout == "", refused.stdout
    assert f"user: there is no account {typo!r}" in refused.stderr, refused.stderr
    [hint] = [line for line in refused.stderr.splitlines() if "hint:" in line]
    assert "did you mean" in hint and name in hint and "--create" in hint  # (other tests' accounts may be close too)
    stranger = console.sf("token", "create", "--user", "zq" + uuid.uuid4().hex[:6])
    assert stranger.returncode == 1 and "did you mean" not in stranger.stderr
    listed = {u["username"] for u in json.loads(console.sf("user", "ls", "--json", check=True).stdout)}
    assert name in listed and typo not in listed
    made = console.sf("token", "create", "--user", typo, "--create", check=True).stdout.strip()
    with console.client(made) as api:
        assert api.get("/api/whoami").json()["username"] == typo


@pytest.mark.parametrize("console", BACKENDS, indirect=True)
def test_tokens_are_stored_hashed(console: ConsoleProcess) -> None:
    token = console.token_for(unique())
    if console.database_url:
        import psycopg

        with psycopg.connect(console.database_url.replace("+psycopg", "")) as conn:
            rows = [r[0] for r in conn.execute("SELECT token_hash FROM tokens")]
    else:
        import sqlite3

        with sqlite3.connect(console.state_dir / "console.db") as conn:
            rows = [r[0] for r in conn.execute("SELECT token_hash FROM tokens")]
    assert rows and token not in rows and all(len(r) == 64 for r in rows)


@pytest.mark.parametrize("path", ["/api/jobs/", "/api/whoami/"])
def test_no_slash_redirects(console: ConsoleProcess, path: str) -> None:
    with console.client(console.admin_token) as api:
        response = api.request("POST" if path == "/api/jobs/" else "GET", path)
    assert response.status_code in (404, 405) and "location" not in response.headers
