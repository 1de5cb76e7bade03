"""What `Console` puts on the wire and how it reacts, through httpx's transport seam (no patching).

Each test answers with a small handler function and inspects the requests the client really built; the
behaviour against a real console is covered by tests/integration.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from starforge.client import (
    AuthError,
    Console,
    ConsoleError,
    Credentials,
    DeviceCode,
    ForgeHome,
    NotFound,
    NotLoggedIn,
    Rejected,
    Unavailable,
    login_with_token,
    logout,
    poll_device_login,
    start_device_login,
)

URL = "http://console.test"


class Recorder:
    """An httpx transport that records every request and answers with `respond(request, index)`."""

    def __init__(self, respond: Callable[[httpx.Request, int], httpx.Response]) -> None:
        self.requests: list[httpx.Request] = []
        self._respond = respond

    def transport(self) -> httpx.MockTransport:
        def handler(request: httpx.Request) -> httpx.Response:
            self.requests.append(request)
            request.read()
            return self._respond(request, len(self.requests) - 1)

        return httpx.MockTransport(handler)

    @property
    def paths(self) -> list[str]:
        return [f"{r.method} {r.url.raw_path.decode()}" for r in self.requests]


def answer(status: int = 200, body: object = None) -> httpx.Response:
    return httpx.Response(status, json={} if body is None else body)


WHOAMI = {"user": {"username": "alice", "role": "operator", "email": "a@x"}, "username": "alice"}


def test_transport_headers_and_no_client_version() -> None:
    rec = Recorder(lambda r, i: answer(body=WHOAMI))
    assert Console(URL, "T", transport=rec.transport()).whoami().username == "alice"
    headers = rec.requests[0].headers
    assert headers["connection"] == "close"
    assert headers["accept-encoding"] == "identity"
    assert headers["authorization"] == "Bearer T"
    assert re.fullmatch(r"Python-urllib/3\.\d+", headers["user-agent"])


def test_not_logged_in_stops_before_any_request() -> None:
    rec = Recorder(lambda r, i: answer())
    with pytest.raises(NotLoggedIn) as caught:
        Console(URL, transport=rec.transport()).jobs()
    assert rec.requests == []
    assert "sf login" in caught.value.hint


def test_expired_credentials_are_refreshed_first_and_rotation_is_saved(tmp_path: Path) -> None:
    home = ForgeHome(tmp_path, env={})

    def respond(request: httpx.Request, index: int) -> httpx.Response:
        if request.url.path == "/api/auth/refresh":
            assert "authorization" not in request.headers
            assert json.loads(request.content) == {"refresh_token": "R1"}
            return answer(body={"access_token": "A2", "refresh_token": "R2", "expires_in": 3600})
        assert request.headers["authorization"] == "Bearer A2"
        return answer(body=WHOAMI)

    rec = Recorder(respond)
    old = Credentials("A1", "R1", 999.0, {"username": "alice"})
    console = Console(URL, credentials=old, home=home, transport=rec.transport(), clock=lambda: 1000.0)
    console.whoami()
    console.whoami()
    assert rec.paths == ["POST /api/auth/refresh", "GET /api/whoami", "GET /api/whoami"]
    expected = Credentials("A2", "R2", 1000.0 + 3600 - 60, {"username": "alice"})
    assert console.credentials == expected
    assert home.credentials(URL) == expected


def test_refresh_429_is_retried_twice_then_gives_up() -> None:
    sleeps: list[float] = []
    rec = Recorder(lambda r, i: answer(429, {"detail": "slow down"}))
    console = Console(URL, credentials=Credentials("A", "R", 0.0), transport=rec.transport(),
                      clock=lambda: 10.0, sleep=sleeps.append)
    with pytest.raises(Unavailable):
        console.whoami()
    assert sleeps == [1.5, 3.0]
    assert rec.paths == ["POST /api/auth/refresh"] * 3


def test_refresh_429_then_success() -> None:
    sleeps: list[float] = []
    rec = Recorder(lambda r, i: answer(429) if i == 0 else answer(body={"access_token": "B"} if i == 1 else WHOAMI))
    console = Console(URL, credentials=Credentials("A", "R", 0.0), transport=rec.transport(),
                      clock=lambda: 10.0, sleep=sleeps.append)
    console.whoami()
    assert sleeps == [1.5]
    assert console.credentials is not None and console.credentials.refresh_token == "R"


@pytest.mark.parametrize("refresh", [None, "R"])
def test_failed_or_impossible_refresh_means_logged_out(refresh: str | None) -> None:
    rec = Recorder(lambda r, i: answer(401, {"detail": "refresh token revoked"}))
    console = Console(URL, credentials=Credentials("A", refresh, 0.0), transport=rec.transport(), clock=lambda: 5.0)
    with pytest.raises(AuthError) as caught:
        console.whoami()
    assert "expired" in str(caught.value) and "sf login" in caught.value.hint
    assert rec.paths == ([] if refresh is None else ["POST /api/auth/refresh"])


def test_a_401_never_triggers_a_refresh() -> None:
    rec = Recorder(lambda r, i: answer(401, {"detail": "token expired"}))
    console = Console(URL, credentials=Credentials("A", "R", 5000.0), transport=rec.transport(), clock=lambda: 1.0)
    with pytest.raises(AuthError):
        console.whoami()
    assert rec.paths == ["GET /api/whoami"]


def test_posts_do_not_follow_redirects() -> None:
    rec = Recorder(lambda r, i: httpx.Response(307, headers={"Location": f"{URL}/api/job/stop/?id=x"}))
    with pytest.raises(ConsoleError) as caught:
        Console(URL, "T", transport=rec.transport()).stop("x")
    assert "redirect" in str(caught.value)
    assert len(rec.requests) == 1


def test_job_control_sends_an_empty_body_and_encodes_the_id() -> None:
    rec = Recorder(lambda r, i: answer(body={}))
    result = Console(URL, "T", transport=rec.transport()).stop("a/b c")
    request = rec.requests[0]
    assert rec.paths == ["POST /api/job/stop?id=a%2Fb%20c"]
    assert request.headers["content-length"] == "0" and "content-type" not in request.headers
    assert result.stopped is True  # missing `stopped` counts as stopped


def test_lists_use_the_documented_limits() -> None:
    rec = Recorder(lambda r, i: answer(body={"jobs": [{"job_ref": "r-1", "name": "e"}]}))
    console = Console(URL, "T", transport=rec.transport())
    console.jobs()
    console.jobs(all=True)
    console.jobs(limit=1)
    assert console.resolve_job("e").ref == "r-1"
    with pytest.raises(NotFound):
        console.job("r")
    assert rec.paths == ["GET /api/jobs/mine?limit=15", "GET /api/jobs/mine?limit=200", "GET /api/jobs/mine?limit=1",
                         "GET /api/jobs/mine?limit=200", "GET /api/jobs/mine?limit=200"]


def test_submission_request() -> None:
    rec = Recorder(lambda r, i: answer(202, {"job_id": "r-1", "run_id": "r-1", "queued": True, "message": "capacity",
                                             "requested_gpus": 8, "warnings": ["w"]}))
    spec = {"metadata": {"name": "é", "project": "lab"}, "spec": {"source": {"exp": "experiments/e"}}}
    result = Console(URL, "T", transport=rec.transport()).submit(spec, b"GZIP", profile="h200:8")
    request = rec.requests[0]
    assert rec.paths == ["POST /api/jobs"]
    assert request.headers["content-type"] == "application/gzip"
    assert request.headers["content-length"] == "4" and request.content == b"GZIP"
    meta_text = request.headers["x-forge-meta"]
    assert meta_text.isascii()
    meta = json.loads(meta_text)
    assert list(meta) == ["exp", "profile", "git_dirty", "project", "spec"] and meta["spec"] == spec
    assert uuid.UUID(request.headers["idempotency-key"]).version == 4
    assert (result.job_id, result.queued, result.message, result.warnings) == ("r-1", True, "capacity", ("w",))


def test_submission_keeps_a_given_idempotency_key_and_raises_rejections() -> None:
    rejection = {"detail": "The JobSpec was rejected\n- spec.resources.pools: no resource pool is declared",
                 "problems": [{"field": "spec.resources.pools", "code": "pools_empty",
                               "message": "no resource pool is declared", "hint": "pass --profile"}]}
    rec = Recorder(lambda r, i: answer(400, rejection))
    with pytest.raises(Rejected) as caught:
        Console(URL, "T", transport=rec.transport()).submit({}, b"", profile="h200", idempotency_key="k-1")
    assert rec.requests[0].headers["idempotency-key"] == "k-1"
    assert [p.code for p in caught.value.problems] == ["pools_empty"]


def test_check_returns_a_verdict_even_for_a_rejection() -> None:
    ok = Recorder(lambda r, i: answer(body={"ok": True, "problems": [], "warnings": [], "requested_gpus": 8}))
    verdict = Console(URL, "T", transport=ok.transport()).check({"a": 1}, profile="h200:8")
    assert verdict.ok and verdict.requested_gpus == 8
    assert json.loads(ok.requests[0].content) == {"spec": {"a": 1}, "profile": "h200:8"}
    bad = Recorder(lambda r, i: answer(400, {"detail": "The JobSpec was rejected\n- spec.kind: unsupported"}))
    verdict = Console(URL, "T", transport=bad.transport()).check({})
    assert not verdict.ok and [p.field for p in verdict.problems] == ["spec.kind"]


def sse(*events: str) -> httpx.Response:
    return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, content="".join(events).encode())


def test_log_stream_resumes_from_the_last_id_with_backoff() -> None:
    def respond(request: httpx.Request, index: int) -> httpx.Response:
        if index == 0:
            return sse("id: 1\nevent: open\ndata: hi\n\n", "id: 2\nevent: log\ndata: a\ndata:\n\n")
        if index in (1, 2):
            return answer(503 if index == 1 else 429, {"detail": "busy"})
        return sse("id: 3\nevent: log\ndata: b\n\n", "event: end\ndata: done\n\n")

    sleeps: list[float] = []
    rec = Recorder(respond)
    console = Console(URL, "T", transport=rec.transport(), sleep=sleeps.append)
    events = [(e.event, e.data) for e in console.logs("r-1", tail=50)]
    assert events == [("log", "a\n"), ("log", "b"), ("end", "done")]
    assert rec.paths == ["GET /api/job/logs/stream?id=r-1&tail=50"] + ["GET /api/job/logs/stream?id=r-1&from=2"] * 3
    assert "last-event-id" not in rec.requests[0].headers
    assert all(r.headers["last-event-id"] == "2" for r in rec.requests[1:])
    assert 1 <= sleeps[0] <= 1.25 and 2 <= sleeps[1] <= 2.5 and 4 <= sleeps[2] <= 5


@pytest.mark.parametrize("status", [401, 403, 404])
def test_log_stream_other_4xx_are_fatal(status: int) -> None:
    sleeps: list[float] = []
    rec = Recorder(lambda r, i: answer(status, {"detail": "no such job"}))
    with pytest.raises(ConsoleError) as caught:
        list(Console(URL, "T", transport=rec.transport(), sleep=sleeps.append).logs("r-x"))
    assert caught.value.status == status and "no such job" in str(caught.value)
    assert len(rec.requests) == 1 and sleeps == []


def test_log_stream_without_follow_reads_one_connection() -> None:
    rec = Recorder(lambda r, i: sse("event: log\ndata: a\n\n"))
    events = list(Console(URL, "T", transport=rec.transport()).logs("r-1", follow=False))
    assert [e.data for e in events] == ["a"] and len(rec.requests) == 1


def test_token_login_checks_whoami() -> None:
    rec = Recorder(lambda r, i: answer(body=WHOAMI))
    creds = login_with_token(URL + "/", " T ", transport=rec.transport())
    assert creds == Credentials("T", None, None, WHOAMI["user"])
    assert rec.requests[0].headers["authorization"] == "Bearer T"
    bad = Recorder(lambda r, i: answer(403, {"detail": "nope"}))
    with pytest.raises(AuthError) as caught:
        login_with_token(URL, "T", transport=bad.transport())
    assert "invalid token" in str(caught.value)


def test_logout_revokes_then_forgets_even_when_the_console_fails(tmp_path: Path) -> None:
    home = ForgeHome(tmp_path, env={})
    home.save_credentials(URL, Credentials("A", "R", 1.0))
    rec = Recorder(lambda r, i: answer(500, {"detail": "boom"}))
    assert logout(URL, home=home, transport=rec.transport()) == Credentials("A", "R", 1.0)
    assert rec.paths == ["POST /api/auth/logout"] and json.loads(rec.requests[0].content) == {"refresh_token": "R"}
    assert "authorization" not in rec.requests[0].headers
    assert home.credentials(URL) is None


def test_device_code_must_be_200() -> None:
    rec = Recorder(lambda r, i: answer(201, {"device_code": "d", "user_code": "u"}))
    with pytest.raises(AuthError):
        start_device_login(URL, transport=rec.transport())
    good = Recorder(lambda r, i: answer(200, {"device_code": "d", "user_code": "ABCD-EFGH"}))
    code = start_device_login(URL, transport=good.transport())
    assert (code.user_code, code.verification_uri, code.interval, code.expires_in) == (
        "ABCD-EFGH", f"{URL}/cli/device", 5, 900)
    assert set(json.loads(good.requests[0].content)) == {"device"}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_device_poll_sleeps_first_and_slows_down() -> None:
    answers = [answer(400, {"detail": "authorization_pending"}), answer(400, {"detail": "slow_down"}),
               answer(429, {"detail": "rate"}), answer(400, {"detail": "authorization_pending"}),
               answer(200, {"access_token": "A", "refresh_token": "R", "expires_in": 600, "user": {"username": "b"}})]
    rec = Recorder(lambda r, i: answers[i])
    clock = Clock()
    creds = poll_device_login(URL, DeviceCode("dev", "U", "v", interval=5, expires_in=900), transport=rec.transport(),
                              clock=lambda: clock.now, sleep=clock.sleep, now=lambda: 1000.0)
    assert clock.sleeps == [5, 5, 10, 15, 15]
    assert creds == Credentials("A", "R", 1540.0, {"username": "b"})
    assert all(json.loads(r.content) == {"device_code": "dev"} for r in rec.requests)


def test_device_poll_interval_is_capped_at_sixty_seconds() -> None:
    rec = Recorder(lambda r, i: answer(400, {"detail": "slow_down"}))
    clock = Clock()
    with pytest.raises(AuthError) as caught:
        poll_device_login(URL, DeviceCode("d", "U", "v", interval=50, expires_in=300), transport=rec.transport(),
                          clock=lambda: clock.now, sleep=clock.sleep)
    assert clock.sleeps == [50, 55, 60, 60, 60]
    assert "expired" in str(caught.value)


@pytest.mark.parametrize("reply", [answer(400, {"detail": "access_denied"}), httpx.Response(500, content=b"oops")])
def test_device_poll_aborts_on_anything_else(reply: httpx.Response) -> None:
    rec = Recorder(lambda r, i: reply)
    clock = Clock()
    with pytest.raises(AuthError) as caught:
        poll_device_login(URL, DeviceCode("d", "U", "v", interval=1, expires_in=60), transport=rec.transport(),
                          clock=lambda: clock.now, sleep=clock.sleep)
    assert ("access_denied" in str(caught.value)) or ("oops" in str(caught.value))
    assert len(rec.requests) == 1


def test_credentials_refreshed_by_another_process_are_used_without_a_refresh(tmp_path: Path) -> None:
    home = ForgeHome(tmp_path, env={})
    home.save_credentials(URL, Credentials("A2", "R2", 5000.0))
    rec = Recorder(lambda r, i: answer(body=WHOAMI))
    console = Console(URL, credentials=Credentials("A1", "R1", 10.0), home=home, transport=rec.transport(),
                      clock=lambda: 1000.0)
    console.whoami()
    assert rec.paths == ["GET /api/whoami"] and rec.requests[0].headers["authorization"] == "Bearer A2"
    assert console.credentials == Credentials("A2", "R2", 5000.0)
