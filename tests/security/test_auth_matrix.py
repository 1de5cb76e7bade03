"""Every route × every identity on a real console: strangers get 401, nobody sees another user's job, viewers
change nothing, and no answer is a 5xx.

The routes are read from the application itself (`routes.app_routes`), so a new route is probed without editing
this file; the only lists here are the reviewed allowlists below, and a stale entry in them fails
`test_route_inventory_matches_the_live_console`.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.conftest import ConsoleProcess
from tests.integration.helpers import spec_for, submit
from tests.security.consoles import Launcher, account, server_errors, wait_for
from tests.security.matrix import (
    JOB_PARAMS,
    NO_SUCH_JOB,
    PLUGIN,
    Answer,
    Call,
    Identity,
    World,
    calls_for,
    send,
)
from tests.security.routes import Route, app_routes, fill, normalise
from tests.security.wire import device_login, plugin_package, start_running_job

# ---- the reviewed allowlists ---------------------------------------------------------------------------------------

# Routes that answer without a bearer token, and why that is safe.
PUBLIC: dict[tuple[str, str], str] = {
    ("GET", "/api/version"): "version handshake (wire protocol §5.1), no data",
    ("POST", "/api/cli/device/code"): "starts a device login; grants nothing until a signed-in user approves it",
    ("POST", "/api/cli/device/token"): "device polling; tokens only for an approved, unconsumed device code",
    ("POST", "/api/auth/refresh"): "authenticated by the refresh token in the body",
    ("POST", "/api/auth/logout"): "revokes the refresh token in the body; unknown tokens are ignored",
    ("GET", "/cli/device"): "the device flow's verification URI: a redirect to the web console's approval page",
    ("GET", "/openapi.json"): "FastAPI's schema: route shapes, no data",
    ("HEAD", "/openapi.json"): "FastAPI's schema",
    ("GET", "/docs"): "the API reference rendered from the schema: route shapes, no data",
    ("GET", "/"): "the web console: the sign-in page for a visitor (the jobs page needs a session)",
    ("POST", "/ui/signin"): "the web sign-in form; authenticated by the token typed into it",
    ("GET", "/ui/static/{name}"): "the web console's own stylesheet and script",
}
# Public routes that still authenticate a credential carried in the body or a form: strangers must get 401.
BODY_AUTHENTICATED = {("POST", "/api/auth/refresh"), ("POST", "/ui/signin")}
# Routes for code inside jobs: only a run token, only for its own run (the matrix always names another run).
RUN_TOKEN_ONLY = {("POST", "/api/ingest/{path}"), ("GET", "/api/runs/{run_id}/workdir")}
# Writes any signed-in account (viewers included) may make, acting only for itself.
SELF_SERVICE: dict[tuple[str, str], str] = {
    ("POST", "/api/admission/check"): "a dry run of admission: nothing is stored",
    ("POST", "/api/cli/device/approve"): "approves a login for the caller's own account",
    ("POST", "/api/cli/device/deny"): "refuses a pending login the caller's device names (a 404 for anyone else)",
    ("POST", "/api/mcp/rpc"): "the MCP transport; every tool calls the same services as these routes, as the caller",
    ("DELETE", "/api/mcp/rpc"): "the MCP transport (session end)",
    ("POST", "/ui/device/review"): "the web page showing a pending login before it is approved; changes nothing",
    ("POST", "/ui/device"): "the web page approving a login for the caller's own account",
    ("POST", "/ui/device/deny"): "the web page refusing a pending login the caller's device names",
    ("POST", "/ui/signout"): "ends the caller's own browser session",
}
# Writes an operator (not a viewer) may make on its own jobs and namespace.
OPERATOR_SELF = {
    ("POST", "/api/jobs"), ("POST", "/api/jobs/cancel-all"), ("POST", "/api/job/stop"),
    ("POST", "/api/plugins/publish"), ("PATCH", "/api/plugins/{owner}/{name}"), ("POST", "/ui/jobs/{ref}/stop"),
    *(("POST", path.format(verb=verb)) for verb in ("pause", "resume", "retry")
      for path in ("/api/job/{verb}", "/api/jobs/{{ref}}/{verb}", "/ui/jobs/{{ref}}/{verb}")),
}

REFRESH = ("POST", "/api/auth/refresh")


# ---- the world: alice's jobs, plugin and credentials on a dedicated console ---------------------------------------

MATRIX_CONFIG = {
    "capacity": {"cpu": 1},
    "image_allowlist": ["nvcr.io"],
    "access_token_ttl": 1,   # interactive sessions expire fast, so an expired token can be had legitimately
    "refresh_token_ttl": 1,
    "stop_grace_seconds": 1,
}


def _expired_session(console: ConsoleProcess, owner_token: str) -> dict[str, Any]:
    """Return a session of the owner's, issued by the device flow and now refused only because it expired."""
    session = device_login(console, owner_token)
    as_session = {"Authorization": f"Bearer {session['access_token']}"}
    wait_for(lambda: httpx.get(f"{console.url}/api/whoami", headers=as_session).status_code == 401,
             what="the 1-second session to expire", timeout=30, every=0.2)
    assert "expired" in httpx.get(f"{console.url}/api/whoami", headers=as_session).json()["detail"]
    refused = httpx.post(f"{console.url}/api/auth/refresh", json={"refresh_token": session["refresh_token"]})
    assert refused.status_code == 401 and "expired" in refused.json()["detail"]
    return session


def _revoked_session(console: ConsoleProcess, owner_token: str) -> dict[str, Any]:
    """Return a session of the owner's that was logged out (`sf logout`)."""
    session = device_login(console, owner_token)
    assert httpx.post(f"{console.url}/api/auth/logout", json={"refresh_token": session["refresh_token"]}).json()["ok"]
    return session


@pytest.fixture(scope="module")
def world(launch_module: Launcher, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    console = launch_module("sqlite", MATRIX_CONFIG)
    names = [account(console, prefix) for prefix in ("alice", "bob", "viewer", "gone")]
    (alice, _), (bob, _), (viewer, _), (gone, _) = names
    tokens = dict(names)
    with console.client(tokens[alice]) as api:
        running = start_running_job(console, api, alice)
        try:
            yield _populate(console, tokens, alice, bob, viewer, gone, running.job_id, running.run_token,
                            app_routes(tmp_path_factory.mktemp("inventory") / "state"))
        finally:
            running.stop(api)


def _populate(console: ConsoleProcess, tokens: dict[str, str], alice: str, bob: str, viewer: str, gone: str,
              running_job: str, run_token: str, routes: list[Route]) -> World:
    """Give alice a pending job and a plugin, the viewer a plugin (published before its demotion), and build
    every identity of the matrix."""
    with console.client(tokens[alice]) as api, console.client(console.admin_token) as admin:
        spec = spec_for(api, series="h200", gpus=8)
        pending = submit(api, spec)
        assert pending.status_code == 202 and pending.json()["status"] == "pending", pending.text
        for owner in (alice, viewer):  # the viewer publishes while still an operator, then is demoted
            with console.client(tokens[owner]) as client:
                published = client.post("/api/plugins/publish", content=plugin_package(PLUGIN))
                assert published.status_code == 200, published.text
        assert admin.patch(f"/api/admin/users/{viewer}/role", params={"role": "viewer"}).status_code == 200
        assert admin.patch(f"/api/admin/users/{gone}/disabled", params={"disabled": "true"}).status_code == 200
    expired, revoked = _expired_session(console, tokens[alice]), _revoked_session(console, tokens[alice])
    w = World(console, routes, alice, viewer, tokens, spec, pending.json()["job_id"], running_job, run_token)
    garbage, oversized = f"sfa_{secrets.token_urlsafe(32)}", "A" * 8192
    w.identities = {i.name: i for i in (
        Identity("no-token", None),
        Identity("garbage-token", f"Bearer {garbage}", bare_token=garbage),
        Identity("oversized-token", f"Bearer {oversized}", bare_token=oversized),
        Identity("wrong-scheme", f"Token {tokens[alice]}"),  # alice's valid API token under another scheme
        Identity("expired-session", f"Bearer {expired['access_token']}", bare_token=expired["access_token"],
                 refresh_token=expired["refresh_token"]),
        Identity("revoked-session", f"Bearer {revoked['access_token']}", bare_token=revoked["access_token"],
                 refresh_token=revoked["refresh_token"]),
        Identity("disabled-account", f"Bearer {tokens[gone]}", bare_token=tokens[gone]),
        Identity("run-token", f"Bearer {run_token}", bare_token=run_token),
        Identity("other-user", f"Bearer {tokens[bob]}", bob, "operator", tokens[bob]),
        Identity("viewer", f"Bearer {tokens[viewer]}", viewer, "viewer", tokens[viewer]),
    )}
    return w


# ---- what must hold -------------------------------------------------------------------------------------------------

def stranger_violations(call: Call, answer: Answer) -> list[str]:
    """Rules for callers without a usable bearer token."""
    key = call.route.key
    if answer.status >= 500:
        return ["a 5xx"]
    if key in PUBLIC:
        return ["a credential in the body was accepted"] if key in BODY_AUTHENTICATED and answer.status != 401 else []
    if answer.status != 401:
        return ["expected 401"]
    if not isinstance(answer.detail(), str) or not answer.detail():
        return ["a 401 without a detail"]
    return []


def _unnamed(answer: Answer, job: str) -> str:
    return answer.text.replace(job, "<job>")


def user_violations(call: Call, answer: Answer, who: Identity, twin: Answer | None, w: World) -> list[str]:
    """Rules for signed-in non-administrators acting on alice's resources, their own, and the admin API."""
    route, key, ok = call.route, call.route.key, 200 <= answer.status < 300
    found = []
    if answer.status >= 500:
        found.append("a 5xx")
    if key == REFRESH and answer.status != 401:
        found.append("expected 401 (no valid refresh token was sent)")
    if key in RUN_TOKEN_ONLY and answer.status != 401:
        found.append("a bearer token was accepted where only a run token may be")
    if normalise(route.path).startswith(("/api/admin/", "/ui/admin")) and answer.status != 403:
        found.append("an administrators-only route did not answer 403")
    if call.job_scoped:
        if ok:
            found.append("alice's job was reachable")
        if who.role == "operator" and answer.status != 404 and key not in RUN_TOKEN_ONLY:
            found.append("another user's job must be 404")
        same = twin is None or (twin.status, _unnamed(twin, NO_SUCH_JOB)) == (answer.status, _unnamed(answer, call.job))
        if not same:
            found.append("alice's job and a missing job answer differently: existence leaks")
    if ok and route.mutating and call.target == "alice":
        found.append("changed something of alice's")
    allowed = set(PUBLIC) | set(SELF_SERVICE) | (OPERATOR_SELF if who.role == "operator" else set())
    if ok and route.mutating and key not in allowed:
        found.append(f"a {who.role} may not do this")
    if ok and any(job in answer.text for job in w.job_ids):
        found.append("the answer names alice's job")
    return found


def snapshot(w: World) -> dict[str, Any]:
    """Return what no identity of the matrix may change: accounts, alice's jobs and quota, the probe plugins."""
    with w.admin() as admin:
        users = {u["username"]: (u["role"], u["disabled"]) for u in admin.get("/api/admin/users").json()["users"]}
        rows = admin.get("/api/jobs/mine", params={"limit": 1000, "all": "true"}).json()["jobs"]
        plugins = {p["id"]: (p["latest_version"], p["enabled"]) for p in admin.get("/api/plugins").json()["plugins"]}
        return {
            "users": users,
            "alice's jobs": {r["job_ref"]: r["status"] for r in rows if r["owner"] == w.alice},
            "alice's quota": admin.get(f"/api/admin/quotas/{w.alice}").json(),
            "plugins": {k: v for k, v in plugins.items() if k.split("/")[0] in (w.alice, w.viewer)},
        }


STRANGERS = ("no-token", "garbage-token", "oversized-token", "wrong-scheme", "expired-session", "revoked-session",
             "disabled-account", "run-token")
USERS = ("other-user", "viewer")


@pytest.mark.parametrize("identity", STRANGERS + USERS)
def test_every_route_for_every_identity(world: World, identity: str) -> None:
    who = world.identities[identity]
    before, errors_before = snapshot(world), len(server_errors(world.console))
    grant = httpx.post(f"{world.console.url}/api/cli/device/code", json={}).json()
    violations: list[str] = []
    sent = 0
    with httpx.Client(base_url=world.console.url, timeout=30) as http:
        for route in world.routes:
            answers: dict[Call, Answer] = {}
            for call in calls_for(route, who, world):
                answers[call] = send(http, call, who, world, grant)
                sent += 1
            for call, answer in answers.items():
                if call.job == NO_SUCH_JOB:
                    continue
                if who.username is None:
                    problems = stranger_violations(call, answer)
                else:
                    twin = next((a for c, a in answers.items() if c.job == NO_SUCH_JOB), None)
                    problems = user_violations(call, answer, who, twin, world)
                violations += [f"{answer.line} -> {answer.status} {answer.text[:160]!r}: {p}" for p in problems]
    if who.username is None:
        polled = httpx.post(f"{world.console.url}/api/cli/device/token", json={"device_code": grant["device_code"]})
        if polled.json().get("detail") != "authorization_pending":
            violations.append(f"the pending device login changed: {polled.status_code} {polled.text[:160]}")
    after = snapshot(world)
    violations += [f"state changed: {name}: {before[name]} -> {after[name]}" for name in before
                   if before[name] != after[name]]
    assert sent >= len(world.routes)
    violations += [f"console log: {line}" for line in server_errors(world.console)[errors_before:]]
    assert not violations, f"{identity}: {len(violations)} findings over {sent} calls:\n" + "\n".join(violations)


# ---- the controls that make the matrix meaningful -------------------------------------------------------------------

def test_route_inventory_matches_the_live_console(world: World) -> None:
    served = {r.key for r in world.routes}
    live = httpx.get(f"{world.console.url}/openapi.json").json()["paths"]
    for path, operations in live.items():
        for method in operations:
            assert (method.upper(), path) in served, f"{method.upper()} {path} is served but was not enumerated"
    assert ("POST", "/api/mcp/rpc") in served  # a route outside the schema is enumerated too
    for key in (*PUBLIC, *SELF_SERVICE, *OPERATOR_SELF, *BODY_AUTHENTICATED, *RUN_TOKEN_ONLY):
        assert key in served, f"allowlist entry {key} names no route: remove it"
    assert len(served) >= 40


def test_owner_and_admin_do_reach_the_job_scoped_routes(world: World) -> None:
    job_routes = [r for r in world.routes if r.params() & JOB_PARAMS and r.method == "GET"
                  and r.key not in RUN_TOKEN_ONLY]
    assert len(job_routes) >= 5
    for token in (world.tokens[world.alice], world.console.admin_token):
        with world.console.client(token) as api:
            for route in job_routes:
                path = fill(route.path, {"ref": world.pending_job})
                params = {"id": world.pending_job} if "id" in route.query_params else {}
                with api.stream("GET", path, params=params) as response:
                    assert response.status_code == 200, (route.path, response.status_code)


def test_the_run_token_works_only_for_its_own_run_and_only_on_ingest(world: World) -> None:
    url = world.console.url
    point = {"points": [{"key": "probe/x", "step": 1, "value": 1.0, "ts": 0}]}
    own = httpx.post(f"{url}/api/ingest/metrics", json={"run_id": world.running_job, **point},
                     headers={"X-StarForge-Token": world.run_token})
    assert own.status_code == 200, own.text
    other = httpx.post(f"{url}/api/ingest/metrics", json={"run_id": world.pending_job, **point},
                       headers={"X-StarForge-Token": world.run_token})
    assert other.status_code == 401
    bearer = httpx.post(f"{url}/api/ingest/metrics", json={"run_id": world.running_job, **point},
                        headers={"X-StarForge-Token": world.tokens[world.alice]})
    assert bearer.status_code == 401  # an account's API token is not a run token
    whoami = httpx.get(f"{url}/api/whoami", headers={"Authorization": f"Bearer {world.run_token}"})
    assert whoami.status_code == 401
    work = httpx.get(f"{url}/api/runs/{world.running_job}/workdir", headers={"X-StarForge-Token": world.run_token})
    assert work.status_code == 200 and work.content[:2] == b"\x1f\x8b"  # its own work folder, as a gzip tar
    for run, token in ((world.pending_job, world.run_token), (world.running_job, world.tokens[world.alice])):
        refused = httpx.get(f"{url}/api/runs/{run}/workdir", headers={"X-StarForge-Token": token})
        assert refused.status_code == 401


def test_the_device_page_escapes_what_it_echoes(world: World) -> None:
    link = httpx.get(f"{world.console.url}/cli/device", params={"code": "<script>x</script>"})
    assert link.status_code == 303 and "<" not in link.headers["location"]
    with world.console.client(world.tokens[world.alice]) as api:
        page = api.get(link.headers["location"], headers={"Accept": "text/html"})
    assert page.status_code == 200 and "<script>x" not in page.text
